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
