package xds

import (
	"iter"
	"sync"

	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
)

// sentVersions is what a delta client holds of one type: the version of
// each resource, by name. Most of it is the same for every proxy of a
// namespace (the outbound clusters, the load assignments), so it is kept as
// a base shared by those connections plus the few entries where this
// client differs (its inbound clusters and listeners), instead of a map of
// thousands of entries per connection. Immutable once built; nil is the
// empty set.
type sentVersions struct {
	base *versionBase
	// own are the differences from base: a version, or gone for a base
	// entry the client does not hold
	own map[string]string
}

// gone marks, in own, a base entry the client does not hold (no version
// is this string).
const gone = "\x00gone"

// versionBase is a shared set of versions; each entry has an index, so
// that a walk over a client's resources can tell which base entries it
// covered.
type versionBase struct {
	m map[string]baseEntry
}

type baseEntry struct {
	version string
	i       int
}

func (b *versionBase) get(name string) (string, bool) {
	if b == nil {
		return "", false
	}
	e, ok := b.m[name]
	return e.version, ok
}

func (b *versionBase) len() int {
	if b == nil {
		return 0
	}
	return len(b.m)
}

// get returns the version the client holds of a resource.
func (s *sentVersions) get(name string) (string, bool) {
	if s == nil {
		return "", false
	}
	if v, ok := s.own[name]; ok {
		if v == gone {
			return "", false
		}
		return v, true
	}
	return s.base.get(name)
}

// all yields every resource the client holds and its version.
func (s *sentVersions) all() iter.Seq2[string, string] {
	return func(yield func(string, string) bool) {
		if s == nil {
			return
		}
		if s.base != nil {
			for n, e := range s.base.m {
				if _, ok := s.own[n]; ok {
					continue
				}
				if !yield(n, e.version) {
					return
				}
			}
		}
		for n, v := range s.own {
			if v != gone && !yield(n, v) {
				return
			}
		}
	}
}

// sentFromMap is a set held as given (a reconnecting client's initial
// versions, or what is left after an unsubscription); the next push bases
// it on its group's.
func sentFromMap(m map[string]string) *sentVersions {
	if len(m) == 0 {
		return nil
	}
	return &sentVersions{own: m}
}

// without is s less some names.
func (s *sentVersions) without(names []string) *sentVersions {
	m := map[string]string{}
	for n, v := range s.all() {
		m[n] = v
	}
	for _, n := range names {
		delete(m, n)
	}
	return sentFromMap(m)
}

// sentScope is a group of connections likely to hold the same resources
// of every type: their proxy type and namespace.
type sentScope struct {
	proxyType string
	namespace string
}

// sentBases holds, per scope and type, the base the sets of the scope's
// connections are built on. A group's base is the first set that differed
// too much from it; the sets built on an earlier base keep it alive until
// their next push. The namespace is the client's own metadata, so the
// scopes are counted by their connections and a scope's bases go with its
// last connection: a client cycling namespaces costs nothing once it has
// gone. Owned by one DiscoveryServer.
type sentBases struct {
	mu     sync.Mutex
	scopes map[sentScope]*scopeBases
}

type scopeBases struct {
	conns  int
	byType map[string]*versionBase
}

// join counts a connection of the scope.
func (t *sentBases) join(sc sentScope) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.scopes == nil {
		t.scopes = map[sentScope]*scopeBases{}
	}
	b := t.scopes[sc]
	if b == nil {
		b = &scopeBases{byType: map[string]*versionBase{}}
		t.scopes[sc] = b
	}
	b.conns++
}

// leave uncounts a connection of the scope, releasing its bases with the
// last one.
func (t *sentBases) leave(sc sentScope) {
	t.mu.Lock()
	defer t.mu.Unlock()
	b := t.scopes[sc]
	if b == nil {
		return
	}
	if b.conns--; b.conns <= 0 {
		delete(t.scopes, sc)
	}
}

func (t *sentBases) get(sc sentScope, typeURL string) *versionBase {
	t.mu.Lock()
	defer t.mu.Unlock()
	if b := t.scopes[sc]; b != nil {
		return b.byType[typeURL]
	}
	return nil
}

// set makes b the base of a scope's type, if the scope still has
// connections (a base of a scope nobody is in is not kept).
func (t *sentBases) set(sc sentScope, typeURL string, b *versionBase) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if s := t.scopes[sc]; s != nil {
		s.byType[typeURL] = b
	}
}

// size is the number of scopes and of bases held (tests).
func (t *sentBases) size() (scopes, bases int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, s := range t.scopes {
		bases += len(s.byType)
	}
	return len(t.scopes), bases
}

// maxOwn is how many own entries a set may have on a base before the
// client's set becomes a base of its own.
func maxOwn(b *versionBase) int { return b.len()/8 + 16 }

// after is what the client of a scope holds once sent a push of rs (version(i) is the
// version of rs[i]; a name twice: the later), with the held resources left
// at the versions it holds in sent: built on the base of its previous set or of its group
// when that takes few own entries, else as a new base for the group.
func (t *sentBases) after(sc sentScope, typeURL string, rs []*discovery.Resource, version func(int) string, sent *sentVersions, held map[string]string) *sentVersions {
	if len(rs) == 0 && len(held) == 0 {
		return nil
	}
	groupBase := t.get(sc, typeURL)
	var prev *versionBase
	if sent != nil {
		prev = sent.base
	}
	bases := []*versionBase{prev}
	if groupBase != prev {
		bases = append(bases, groupBase)
	}
	for _, b := range bases {
		if b == nil {
			continue
		}
		if own, ok := diffFrom(b, rs, version, sent, held); ok {
			return &sentVersions{base: b, own: own}
		}
	}
	b := &versionBase{m: make(map[string]baseEntry, len(rs)+len(held))}
	add := func(n, v string) {
		if e, ok := b.m[n]; ok {
			e.version = v
			b.m[n] = e
			return
		}
		b.m[n] = baseEntry{version: v, i: len(b.m)}
	}
	for i, r := range rs {
		add(r.Name, version(i))
	}
	for h := range held {
		if v, ok := sent.get(h); ok {
			add(h, v)
		}
	}
	t.set(sc, typeURL, b)
	return &sentVersions{base: b}
}

// afterPartial is what the client holds once sent a partial push of rs:
// what it held, with rs's versions. The set stays on its base while the
// differences are few; then it is rebuilt as after builds a whole push.
func (t *sentBases) afterPartial(sc sentScope, typeURL string, rs []*discovery.Resource, version func(int) string, sent *sentVersions) *sentVersions {
	if len(rs) == 0 {
		return sent
	}
	var base *versionBase
	var own map[string]string
	if sent != nil {
		base = sent.base
		own = make(map[string]string, len(sent.own)+len(rs))
		for n, v := range sent.own {
			own[n] = v
		}
	} else {
		own = make(map[string]string, len(rs))
	}
	for i, r := range rs {
		v := version(i)
		if bv, ok := base.get(r.Name); ok && bv == v {
			delete(own, r.Name)
			continue
		}
		own[r.Name] = v
	}
	if base != nil && len(own) <= maxOwn(base) {
		return &sentVersions{base: base, own: own}
	}
	// the whole set, as one push of every resource held
	merged := &sentVersions{base: base, own: own}
	var all []*discovery.Resource
	var versions []string
	for n, v := range merged.all() {
		all = append(all, &discovery.Resource{Name: n})
		versions = append(versions, v)
	}
	return t.after(sc, typeURL, all, func(i int) string { return versions[i] }, sent, nil)
}

// diffFrom returns the own entries of the set after the push on base b,
// and false when there would be more than maxOwn.
func diffFrom(b *versionBase, rs []*discovery.Resource, version func(int) string, sent *sentVersions, held map[string]string) (map[string]string, bool) {
	limit := maxOwn(b)
	var own map[string]string
	covered := make([]bool, b.len()) // base entries the client holds
	set := func(n, v string) bool {
		if e, ok := b.m[n]; ok {
			covered[e.i] = true
			if e.version == v {
				delete(own, n) // a duplicate name: the later version wins
				return true
			}
		}
		if own == nil {
			own = map[string]string{}
		}
		own[n] = v
		return len(own) <= limit
	}
	for i, r := range rs {
		if !set(r.Name, version(i)) {
			return nil, false
		}
	}
	for h := range held {
		if v, ok := sent.get(h); ok && !set(h, v) {
			return nil, false
		}
	}
	missing := 0
	for _, c := range covered {
		if !c {
			missing++
		}
	}
	if missing == 0 {
		return own, true
	}
	if len(own)+missing > limit {
		return nil, false
	}
	if own == nil {
		own = map[string]string{}
	}
	for n, e := range b.m {
		if !covered[e.i] {
			own[n] = gone
		}
	}
	return own, true
}

// resourceVersions gives the version of each resource: the one its
// generator set, else a content hash, computed once.
func resourceVersions(rs []*discovery.Resource) func(int) string {
	var computed []string
	return func(i int) string {
		if v := rs[i].Version; v != "" {
			return v
		}
		if computed == nil {
			computed = make([]string, len(rs))
		}
		if computed[i] == "" {
			computed[i] = ContentVersion(rs[i].GetResource().GetValue())
		}
		return computed[i]
	}
}
