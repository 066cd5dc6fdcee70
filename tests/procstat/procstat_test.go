package procstat

import "testing"

func TestMemoryOfSelf(t *testing.T) {
	rss, peak := Memory("self")
	if rss <= 0 || peak < rss {
		t.Fatalf("rss %d peak %d", rss, peak)
	}
}
