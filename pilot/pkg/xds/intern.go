package xds

import "unique"

// intern returns the canonical copy of a subscribed name. Names arrive
// fresh in every request, and the connections of one scope subscribe to the
// same ones (a proxy's endpoint subscription alone is a name per cluster):
// interned, each name's bytes are held once however many connections watch
// it.
//
// The canonical copies live in the runtime's unique map, which holds a name
// only while a Handle of it is alive: the subscriptions that hold names
// (nameSet) keep their handles, so a name stays canonical exactly as long as
// some subscription holds it and goes when the last one does. Nothing of
// ours grows with the names clients ever sent: a client cycling through
// random names on the open port costs what its live subscriptions hold.
// (A name held only as a string, without a handle, such as a reconnecting
// client's initial versions, stays valid; the next request for it may just
// make a second copy.)
func intern(name string) string { return unique.Make(name).Value() }
