package krt

import (
	"fmt"
	"slices"
	"testing"
)

type ordered struct{ Name, Group string }

func (o ordered) ResourceName() string { return o.Name }

// TestIndexUpdatedBeforeSubscribers checks that every subscriber of a
// collection (what feeds handler queues and derived collections) is told of
// a change only after the collection's indexes hold it. A handler's
// goroutine may run as soon as its queue is fed; when an index was updated
// after that (subscribers used to be called in map order, indexes among
// them), a handler reading the index saw the state before its own event,
// e.g. the ServiceEntry registry still found a deleted entry under its host
// and never announced the host's removal.
//
// The check runs inside the subscriber callbacks, under the collection's
// lock, so it does not depend on goroutine scheduling.
func TestIndexUpdatedBeforeSubscribers(t *testing.T) {
	c := NewStaticCollection([]ordered{{"a", "g1"}})
	b := baseOf[ordered](c)
	var idx Index[string, ordered]
	var failures []string
	check := func(sub int) func([]Event[ordered]) {
		return func(events []Event[ordered]) {
			for _, e := range events {
				names := func(g string) []string {
					var out []string
					for _, o := range idx.Lookup(g) {
						out = append(out, o.Name)
					}
					return out
				}
				if e.Old != nil && (e.New == nil || e.New.Group != e.Old.Group) && slices.Contains(names(e.Old.Group), e.Old.Name) {
					failures = append(failures, fmt.Sprintf("subscriber %d, %s of %s: still under %q", sub, e.Event, e.Old.Name, e.Old.Group))
				}
				if e.New != nil && !slices.Contains(names(e.New.Group), e.New.Name) {
					failures = append(failures, fmt.Sprintf("subscriber %d, %s of %s: not under %q", sub, e.Event, e.New.Name, e.New.Group))
				}
			}
		}
	}
	subscribe := func(sub int) {
		b.subscribe(&subscriber[ordered]{onEvents: check(sub), onSynced: func() {}}, false)
	}
	// Subscribers registered before and after the index: neither may
	// overtake it.
	for i := range 4 {
		subscribe(i)
	}
	idx = NewIndex(c, func(o ordered) []string { return []string{o.Group} })
	for i := 4; i < 8; i++ {
		subscribe(i)
	}
	for i := range 20 {
		c.Set(ordered{"a", fmt.Sprintf("g%d", i+2)}) // move
		c.Set(ordered{"b", "g1"})                    // add
		c.Delete("b")                                // delete
	}
	c.Delete("a")
	if len(failures) > 0 {
		t.Fatalf("%d events reached a subscriber before the index, e.g. %v", len(failures), failures[:min(3, len(failures))])
	}
}
