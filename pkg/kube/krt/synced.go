package krt

// Syncer is anything that reports whether its initial state is in:
// collections and handler registrations.
type Syncer interface{ HasSynced() bool }

// AllSynced reports whether every syncer has synced.
func AllSynced(ss ...Syncer) bool {
	for _, s := range ss {
		if !s.HasSynced() {
			return false
		}
	}
	return true
}
