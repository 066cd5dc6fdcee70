package krt_test

import (
	"testing"

	"github.com/meshplane/istiod/pkg/kube/krt"
)

func TestJoinPrecedence(t *testing.T) {
	stop := stopper(t)
	first := krt.NewStaticCollection([]named{{"shared", "first"}}, krt.WithStop(stop))
	second := krt.NewStaticCollection([]named{{"shared", "second"}, {"only2", "second"}}, krt.WithStop(stop))
	third := krt.NewStaticCollection([]named{{"shared", "third"}}, krt.Unsynced(), krt.WithStop(stop))
	j := krt.JoinCollection([]krt.Collection[named]{first, second, third}, krt.WithStop(stop))
	reg := j.RegisterBatch(func([]krt.Event[named]) {}, false)
	third.MarkSynced()
	waitSynced(t, j)
	waitSynced(t, reg)
	if got := j.List(); len(got) != 2 || got[0] != (named{"only2", "second"}) || got[1] != (named{"shared", "first"}) {
		t.Fatalf("List = %+v", got)
	}
	r := record(t, j)
	r.expect(t, krt.EventAdd, nil, &named{"only2", "second"})
	r.expect(t, krt.EventAdd, nil, &named{"shared", "first"})

	second.Set(named{"shared", "second2"}) // hidden by first: no event
	first.Delete("shared")                 // falls through to second
	r.expect(t, krt.EventUpdate, &named{"shared", "first"}, &named{"shared", "second2"})
	second.Delete("shared") // then to third
	r.expect(t, krt.EventUpdate, &named{"shared", "second2"}, &named{"shared", "third"})
	first.Set(named{"shared", "back"}) // first wins again
	r.expect(t, krt.EventUpdate, &named{"shared", "third"}, &named{"shared", "back"})
	first.Delete("shared")
	third.Delete("shared")
	second.Delete("only2")
	// first's delete reveals third; third's delete then removes the key.
	// Coalescing may skip the intermediate state, so read until the delete.
	for {
		e := r.next(t)
		if e.Latest().Key == "only2" {
			if e.Event != krt.EventDelete {
				t.Fatalf("only2: %v", e.Event)
			}
			break
		}
		if e.Event == krt.EventDelete && e.Old.Key == "shared" {
			continue
		}
		if e.Event != krt.EventUpdate || e.New.Value != "third" {
			t.Fatalf("unexpected %v %s", e.Event, show(e.New))
		}
	}
	if j.GetKey("shared") != nil {
		t.Fatal("shared still present")
	}
}
