package diag

import (
	"testing"
	"time"
)

func TestReportReplaceKeepSinceAndClear(t *testing.T) {
	clock := time.Unix(100, 0)
	b := New(func() time.Time { return clock })
	b.Report("file", "a.yaml", []Problem{
		{Severity: Warning, Object: "VirtualService ns/r", Field: "spec.http[0].routez", Message: "unknown field dropped"},
		{Severity: Error, Object: "DestinationRule ns/d", Message: "bad"},
	})
	b.Report("mesh", "mesh", []Problem{{Severity: Error, Message: "parse"}})
	if got := len(b.List()); got != 3 {
		t.Fatalf("got %d problems", got)
	}
	clock = time.Unix(200, 0)
	b.Report("file", "a.yaml", []Problem{{Severity: Warning, Object: "VirtualService ns/r", Field: "spec.http[0].routez", Message: "unknown field dropped"}})
	l := b.List()
	if len(l) != 2 || l[0].Source != "file" || !l[0].Since.Equal(time.Unix(100, 0)) {
		t.Errorf("list after replace = %+v", l)
	}
	if b.Count(Error) != 1 || b.Count(Warning) != 1 {
		t.Errorf("counts %d/%d", b.Count(Error), b.Count(Warning))
	}
	b.Clear("file", "a.yaml")
	b.Report("mesh", "mesh", nil)
	if len(b.List()) != 0 {
		t.Errorf("not cleared: %+v", b.List())
	}
}

// A provider's problems carry the time the board first saw them, kept while
// they persist; a problem that goes away and comes back is new again. A
// provider's own time stamp wins.
func TestProviderProblemsAreStampedWhenFirstSeen(t *testing.T) {
	clock := time.Unix(100, 0)
	b := New(func() time.Time { return clock })
	sidecar := Problem{Severity: Warning, Source: "analysis", Object: "Sidecar bookinfo/default", Message: "[MP0001] egress is not a firewall"}
	own := Problem{Severity: Error, Source: "mesh", Message: "parse", Since: time.Unix(5, 0)}
	current := []Problem{sidecar, own}
	b.AddProvider(func() []Problem { return current })
	sinceOf := func() map[string]time.Time {
		out := map[string]time.Time{}
		for _, p := range b.List() {
			out[p.Object+p.Message] = p.Since
		}
		return out
	}
	got := sinceOf()
	if !got[sidecar.Object+sidecar.Message].Equal(time.Unix(100, 0)) || !got[own.Message].Equal(time.Unix(5, 0)) {
		t.Fatalf("first list: %v", got)
	}
	clock = time.Unix(200, 0)
	if got := sinceOf(); !got[sidecar.Object+sidecar.Message].Equal(time.Unix(100, 0)) {
		t.Errorf("a persisting problem moved: %v", got)
	}
	current = []Problem{own}
	if got := sinceOf(); len(got) != 1 {
		t.Errorf("fixed problem still listed: %v", got)
	}
	clock = time.Unix(300, 0)
	current = []Problem{sidecar, own}
	if got := sinceOf(); !got[sidecar.Object+sidecar.Message].Equal(time.Unix(300, 0)) {
		t.Errorf("a problem back after a fix keeps its old time: %v", got)
	}
	if !current[0].Since.IsZero() {
		t.Error("the provider's slice was modified")
	}
}
