package ipallocate

import (
	"fmt"
	"net/netip"
)

// pool hands out the addresses of one prefix in order, remembering which
// ServiceEntry ("<namespace>/<name>") holds each. Addresses outside the
// prefix are not its concern. Not safe for concurrent use: the controller
// reconciles one item at a time.
type pool struct {
	prefix netip.Prefix
	owners map[netip.Addr]string
	// next is where the search for a free address starts
	next netip.Addr
}

func newPool(p netip.Prefix) *pool {
	p = p.Masked()
	return &pool{prefix: p, owners: map[netip.Addr]string{}, next: p.Addr().Next()}
}

// take records a as owner's. It reports whether a was held already, and
// whether by owner; an address outside the prefix is neither.
func (p *pool) take(a netip.Addr, owner string) (held, byOwner bool) {
	if !p.prefix.Contains(a) {
		return false, false
	}
	if o, ok := p.owners[a]; ok {
		return true, o == owner
	}
	p.owners[a] = owner
	return false, false
}

// allocate takes the first free address from next on, wrapping to the
// start of the prefix once (the prefix's own address is never handed out).
func (p *pool) allocate(owner string) (netip.Addr, error) {
	first := p.prefix.Addr().Next()
	a, wrapped := p.next, false
	if !a.IsValid() || !p.prefix.Contains(a) {
		a, wrapped = first, true
	}
	for {
		if _, held := p.owners[a]; !held {
			break
		}
		a = a.Next()
		if !a.IsValid() || !p.prefix.Contains(a) {
			if wrapped {
				return netip.Addr{}, fmt.Errorf("%s is exhausted", p.prefix)
			}
			a, wrapped = first, true
		}
	}
	p.owners[a] = owner
	p.next = a.Next()
	return a, nil
}

// release gives back an address owner holds, so that the next allocation
// may hand it out again.
func (p *pool) release(a netip.Addr, owner string) {
	if o, ok := p.owners[a]; !ok || o != owner {
		return
	}
	delete(p.owners, a)
	if !p.next.IsValid() || !p.prefix.Contains(p.next) || a.Less(p.next) {
		p.next = a
	}
}
