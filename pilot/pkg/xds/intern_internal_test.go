package xds

import (
	"fmt"
	"runtime"
	"testing"
	"unsafe"
)

// Interning keeps one copy of each name in use, and nothing of the names no
// subscription holds any more: with a thousand names subscribed and 100,000
// others sent and dropped, the live heap stays where it was. (The table it
// replaced doubled its bound on every reset and held a million entries
// after two million names.)
func TestInternBoundedByNamesInUse(t *testing.T) {
	inUse := map[string]struct{}{}
	for i := range 1000 {
		inUse[intern(fmt.Sprintf("outbound|80||svc-%d.shop.svc.cluster.local", i))] = struct{}{}
	}
	set := watchedSets.intern(inUse) // a subscription holds them
	base := heapInUse()
	for i := range 100_000 {
		_ = intern(fmt.Sprintf("outbound|80||churn-%d.attacker.svc.cluster.local", i))
	}
	// the runtime drops a name's entry in a cleanup after the collection
	// that finds it unreferenced: give those a moment
	var grown int64
	settled(t, runtime.NumGoroutine(), func() bool {
		grown = int64(heapInUse()) - int64(base)
		return grown <= 1<<20
	})
	if grown > 1<<20 {
		t.Errorf("the live heap grew by %d bytes after 100,000 names nobody holds", grown)
	}
	// the names in use are still interned: a new copy maps to the held one
	for n := range set.all() {
		fresh := string([]byte(n))
		if got := intern(fresh); unsafe.StringData(got) != unsafe.StringData(n) {
			t.Fatalf("%s is no longer interned while a subscription holds it", n)
		}
	}
}
