package xds

import (
	"maps"
	"testing"

	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
)

// After a partial push a name stays held unless the push regenerated it:
// sent now, it is no longer held; held again, with the new reason.
func TestPartialPushKeepsWhatItDidNotRegenerate(t *testing.T) {
	before := map[string]string{"a": "old a", "b": "old b", "c": "old c"}
	g := Generated{Partial: true,
		Resources: []*discovery.Resource{{Name: "a"}},
		Held:      []Held{{Name: "b", Reason: "new b"}, {Name: "d", Reason: "new d"}}}
	want := map[string]string{"b": "new b", "c": "old c", "d": "new d"}
	if got := partialHeld(before, g); !maps.Equal(got, want) {
		t.Errorf("held after the push: %v, want %v", got, want)
	}
	if got := partialHeld(map[string]string{"a": "x"}, Generated{Resources: []*discovery.Resource{{Name: "a"}}}); got != nil {
		t.Errorf("the only held name was sent, still held: %v", got)
	}
	if got := partialHeld(nil, g); !maps.Equal(got, map[string]string{"b": "new b", "d": "new d"}) {
		t.Errorf("nothing held before: %v", got)
	}
}
