package krt_test

import (
	"fmt"
	"testing"

	"github.com/meshplane/istiod/pkg/kube/krt"
)

const (
	benchPods     = 10000
	benchServices = 100
)

func benchInputs() ([]pod, []service) {
	pods := make([]pod, benchPods)
	for i := range pods {
		pods[i] = pod{Name: fmt.Sprintf("pod-%d", i), Namespace: "ns", Service: fmt.Sprintf("svc-%d", i%benchServices)}
	}
	services := make([]service, benchServices)
	for i := range services {
		services[i] = service{Name: fmt.Sprintf("svc-%d", i), Namespace: "ns", VIP: "10.0.0.1"}
	}
	return pods, services
}

// BenchmarkDerivedInitial builds a derived collection of 10,000 pods, each
// fetching its service with FetchOne, and waits until it is synced.
func BenchmarkDerivedInitial(b *testing.B) {
	podList, svcList := benchInputs()
	b.ReportAllocs()
	for b.Loop() {
		stop := make(chan struct{})
		services := krt.NewStaticCollection(svcList, krt.WithStop(stop))
		pods := krt.NewStaticCollection(podList, krt.WithStop(stop))
		infos := krt.NewCollection(pods, podsToInfo(&counter{}, services), krt.WithStop(stop))
		waitSynced(b, infos)
		if n := len(infos.List()); n != benchPods {
			b.Fatalf("%d outputs", n)
		}
		close(stop)
	}
}

// BenchmarkDependencyUpdate changes one service of the 10,000-pod derived
// collection and waits for the 100 pods that depend on it to be updated.
func BenchmarkDependencyUpdate(b *testing.B) {
	stop := stopper(b)
	podList, svcList := benchInputs()
	services := krt.NewStaticCollection(svcList, krt.WithStop(stop))
	pods := krt.NewStaticCollection(podList, krt.WithStop(stop))
	runs := &counter{}
	infos := krt.NewCollection(pods, podsToInfo(runs, services), krt.WithStop(stop))
	waitSynced(b, infos)
	updated := make(chan int, 1024)
	reg := infos.RegisterBatch(func(events []krt.Event[podInfo]) { updated <- len(events) }, false)
	waitSynced(b, reg)
	perService := benchPods / benchServices
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		services.Set(service{Name: "svc-7", Namespace: "ns", VIP: fmt.Sprintf("10.1.%d.%d", i/250, i%250)})
		for got := 0; got < perService; {
			select {
			case n := <-updated:
				got += n
			case <-timeAfterTimeout():
				b.Fatal("timed out")
			}
		}
	}
	b.StopTimer()
	if n := runs.get("pod-8"); n != 1 {
		b.Fatalf("pod-8 (svc-8) recomputed %d times", n)
	}
}
