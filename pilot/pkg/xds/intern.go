package xds

import "sync"

// names interns subscribed resource names. They arrive fresh in every
// request, and the connections of one scope subscribe to the same ones: a
// proxy's endpoint subscription alone is a name per cluster. Interned,
// each name's bytes are held once however many connections watch it.
var names internTable

// internTable maps a name to its canonical copy. Names of deleted
// resources would stay forever, so the table starts over once it has grown
// to twice its size at the last start (plus slack): a name interned before
// that is simply held twice for a while, and the table stays within a small
// factor of the names in use. (The unique package is no help here: its
// entries go away as soon as no Handle exists, and the watches keep
// strings, not handles.)
type internTable struct {
	mu    sync.Mutex
	m     map[string]string
	limit int
}

const internSlack = 4096

func (t *internTable) intern(s string) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if c, ok := t.m[s]; ok {
		return c
	}
	if t.m == nil || len(t.m) >= t.limit {
		t.limit = 2*len(t.m) + internSlack
		t.m = make(map[string]string, len(t.m))
	}
	t.m[s] = s
	return s
}

// intern returns the canonical copy of a subscribed name.
func intern(name string) string { return names.intern(name) }
