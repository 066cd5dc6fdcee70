package krt_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/meshplane/istiod/pkg/kube/krt"
)

// TestEventualConsistency writes pods and services from several goroutines
// while a derived collection joins them, then checks that the output equals
// the transform of the final inputs and that each key's events form a chain
// (every Old is the previous New).
func TestEventualConsistency(t *testing.T) {
	stop := stopper(t)
	services := krt.NewStaticCollection[service](nil, krt.WithStop(stop))
	pods := krt.NewStaticCollection[pod](nil, krt.WithStop(stop))
	infos := krt.NewCollection(pods, podsToInfo(&counter{}, services), krt.WithStop(stop))
	last := map[string]*podInfo{}
	var mu sync.Mutex
	var chainErr error
	reg := infos.Register(func(e krt.Event[podInfo]) {
		mu.Lock()
		defer mu.Unlock()
		k := e.Latest().Pod
		if !samePtr(last[k], e.Old) && chainErr == nil {
			chainErr = fmt.Errorf("%s: %v event with old %s, previous new %s", k, e.Event, show(e.Old), show(last[k]))
		}
		last[k] = e.New
	})
	defer reg.UnregisterHandler()

	var writers sync.WaitGroup
	for w := range 4 {
		writers.Add(1)
		go func() {
			defer writers.Done()
			for i := range 300 {
				svc := fmt.Sprintf("s%d", (i+w)%5)
				switch i % 3 {
				case 0:
					services.Set(service{Name: svc, Namespace: "ns", VIP: fmt.Sprintf("10.%d.%d", w, i)})
				case 1:
					pods.Set(pod{Name: fmt.Sprintf("p%d", i%20), Namespace: "ns", Service: svc, IP: fmt.Sprint(w)})
				default:
					if i%7 == 0 {
						pods.Delete(fmt.Sprintf("ns/p%d", i%20))
					} else {
						services.Delete("ns/" + svc)
					}
				}
			}
		}()
	}
	writers.Wait()
	barrier := make(chan struct{})
	barrierReg := infos.Register(func(e krt.Event[podInfo]) {
		if e.New != nil && e.New.Pod == "ns/barrier" {
			close(barrier)
		}
	})
	defer barrierReg.UnregisterHandler()
	pods.Set(pod{Name: "barrier", Namespace: "ns"})
	waitClosed(t, barrier, "the barrier pod")

	want := map[string]podInfo{}
	for _, p := range pods.List() {
		info := podInfo{Pod: p.ResourceName(), IP: p.IP}
		if s := services.GetKey("ns/" + p.Service); s != nil {
			info.VIP = s.VIP
		}
		want[info.Pod] = info
	}
	got := infos.List()
	if len(got) != len(want) {
		t.Fatalf("%d outputs, want %d", len(got), len(want))
	}
	for _, g := range got {
		if want[g.Pod] != g {
			t.Errorf("%s = %+v, want %+v", g.Pod, g, want[g.Pod])
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if chainErr != nil {
		t.Fatal(chainErr)
	}
}
