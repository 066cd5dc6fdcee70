package ipallocate

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	networking "istio.io/api/networking/v1alpha3"

	"github.com/meshplane/istiod/pilot/pkg/config/memory"
	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/config/schema/collections"
	"github.com/meshplane/istiod/pkg/config/schema/gvk"
)

func serviceEntry(name string, created int, res networking.ServiceEntry_Resolution, hosts ...string) config.Config {
	return config.Config{Meta: config.Meta{GroupVersionKind: gvk.ServiceEntry, Name: name, Namespace: "ns",
		CreationTimestamp: time.Unix(int64(1000+created), 0)},
		Spec: &networking.ServiceEntry{Hosts: hosts, Resolution: res,
			Ports: []*networking.ServicePort{{Number: 80, Name: "http", Protocol: "HTTP"}}}}
}

func withStatus(cfg config.Config, addrs ...string) config.Config {
	st := &networking.ServiceEntryStatus{}
	for _, a := range addrs {
		h, v, _ := strings.Cut(a, "=")
		st.Addresses = append(st.Addresses, &networking.ServiceEntryAddress{Host: h, Value: v})
	}
	cfg.Status = st
	return cfg
}

// addresses is the status of a ServiceEntry as "host=address" lines.
func addresses(s *memory.Store, name string) string {
	cfg := s.Get(gvk.ServiceEntry, name, "ns")
	if cfg == nil {
		return "<absent>"
	}
	st, _ := cfg.Status.(*networking.ServiceEntryStatus)
	if st == nil {
		return "<no status>"
	}
	var out []string
	for _, a := range st.GetAddresses() {
		out = append(out, a.GetHost()+"="+a.GetValue())
	}
	return "[" + strings.Join(out, " ") + "]"
}

func eventually(t *testing.T, what string, f func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ok, got := f()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %s", what, got)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func statusIs(t *testing.T, s *memory.Store, name, want string) {
	t.Helper()
	eventually(t, name, func() (bool, string) {
		got := addresses(s, name)
		return got == want, fmt.Sprintf("got %s, want %s", got, want)
	})
}

func create(t *testing.T, s *memory.Store, cfg config.Config) {
	t.Helper()
	if _, err := s.Create(cfg); err != nil {
		t.Fatal(err)
	}
}

// run runs a controller's term on s until the test ends.
func run(t *testing.T, s *memory.Store) {
	t.Helper()
	c := New(Options{Store: s})
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { c.Run(stop); close(done) }()
	t.Cleanup(func() { close(stop); <-done })
}

func TestAllocatesPerHostInOrder(t *testing.T) {
	s := memory.New(collections.Pilot)
	run(t, s)
	create(t, s, serviceEntry("ext", 0, networking.ServiceEntry_DNS, "a.example.com", "b.example.com", "a.example.com", "*.wild.example.com"))
	statusIs(t, s, "ext", "[a.example.com=240.240.0.1 a.example.com=2001:2::1 b.example.com=240.240.0.2 b.example.com=2001:2::2]")
	// DYNAMIC_DNS: the wildcard gets addresses too
	create(t, s, serviceEntry("dyn", 1, networking.ServiceEntry_DYNAMIC_DNS, "*.dyn.example.com"))
	statusIs(t, s, "dyn", "[*.dyn.example.com=240.240.0.3 *.dyn.example.com=2001:2::3]")

	// what is not allocated: NONE resolution, addresses of its own, the opt-out label
	none := serviceEntry("none", 2, networking.ServiceEntry_NONE, "none.example.com")
	own := serviceEntry("own", 3, networking.ServiceEntry_STATIC, "own.example.com")
	own.Spec.(*networking.ServiceEntry).Addresses = []string{"10.9.0.1"}
	opted := serviceEntry("opted", 4, networking.ServiceEntry_DNS, "opted.example.com")
	opted.Labels = map[string]string{"networking.istio.io/enable-autoallocate-ip": "False"}
	for _, c := range []config.Config{none, own, opted} {
		create(t, s, c)
	}
	// a later entry shows the three were handled (the queue is in order)
	create(t, s, serviceEntry("later", 5, networking.ServiceEntry_STATIC, "later.example.com"))
	statusIs(t, s, "later", "[later.example.com=240.240.0.4 later.example.com=2001:2::4]")
	for _, n := range []string{"none", "own", "opted"} {
		if got := addresses(s, n); got != "<no status>" {
			t.Errorf("%s: %s, want no status", n, got)
		}
	}

	// a new host keeps the others' addresses; a status already complete is not rewritten
	cur := s.Get(gvk.ServiceEntry, "ext", "ns").DeepCopy()
	cur.Spec.(*networking.ServiceEntry).Hosts = []string{"b.example.com", "c.example.com"}
	if _, err := s.Update(cur); err != nil {
		t.Fatal(err)
	}
	statusIs(t, s, "ext", "[b.example.com=240.240.0.2 b.example.com=2001:2::2 c.example.com=240.240.0.5 c.example.com=2001:2::5]")
	rv := s.Get(gvk.ServiceEntry, "ext", "ns").ResourceVersion
	create(t, s, serviceEntry("fence", 6, networking.ServiceEntry_DNS, "fence.example.com"))
	statusIs(t, s, "fence", "[fence.example.com=240.240.0.6 fence.example.com=2001:2::6]")
	if got := s.Get(gvk.ServiceEntry, "ext", "ns").ResourceVersion; got != rv {
		t.Errorf("a complete status was written again: version %s, then %s", rv, got)
	}

	// resolution NONE: the addresses it no longer needs are cleared
	cur = s.Get(gvk.ServiceEntry, "ext", "ns").DeepCopy()
	cur.Spec.(*networking.ServiceEntry).Resolution = networking.ServiceEntry_NONE
	if _, err := s.Update(cur); err != nil {
		t.Fatal(err)
	}
	statusIs(t, s, "ext", "[]")
	// and they are handed out again, first the lowest
	create(t, s, serviceEntry("reuse", 7, networking.ServiceEntry_DNS, "reuse.example.com"))
	statusIs(t, s, "reuse", "[reuse.example.com=240.240.0.2 reuse.example.com=2001:2::2]")
}

// A new term reads the addresses in use before allocating, and settles
// addresses two entries hold: the older keeps an allocated address, an
// address an entry declares as its own moves every allocated holder.
func TestTermReadsAddressesInUseAndSettlesConflicts(t *testing.T) {
	s := memory.New(collections.Pilot)
	create(t, s, withStatus(serviceEntry("old", 0, networking.ServiceEntry_DNS, "old.example.com"),
		"old.example.com=240.240.0.1", "old.example.com=2001:2::1"))
	create(t, s, withStatus(serviceEntry("young", 1, networking.ServiceEntry_DNS, "young.example.com"),
		"young.example.com=240.240.0.1", "young.example.com=2001:2::1"))
	create(t, s, withStatus(serviceEntry("auto", 2, networking.ServiceEntry_DNS, "auto.example.com"),
		"auto.example.com=240.240.0.7", "auto.example.com=2001:2::7"))
	declared := serviceEntry("declared", 3, networking.ServiceEntry_STATIC, "declared.example.com")
	declared.Spec.(*networking.ServiceEntry).Addresses = []string{"240.240.0.7"}
	create(t, s, declared)
	run(t, s)
	statusIs(t, s, "old", "[old.example.com=240.240.0.1 old.example.com=2001:2::1]")
	// the lowest free addresses: 0.1 and 0.7 are taken
	young, auto := addresses(s, "young"), addresses(s, "auto")
	eventually(t, "both reassigned", func() (bool, string) {
		young, auto = addresses(s, "young"), addresses(s, "auto")
		return !strings.Contains(young, "240.240.0.1 ") && !strings.Contains(auto, "240.240.0.7 "), young + " " + auto
	})
	got := map[string]bool{}
	for _, st := range []string{young, auto} {
		for _, f := range strings.Fields(strings.Trim(st, "[]")) {
			_, a, _ := strings.Cut(f, "=")
			if got[a] {
				t.Errorf("%s handed out twice: %s %s", a, young, auto)
			}
			got[a] = true
		}
	}
	for _, a := range []string{"240.240.0.2", "240.240.0.3", "2001:2::2", "2001:2::3"} {
		if !got[a] {
			t.Errorf("%s not handed out: young %s, auto %s", a, young, auto)
		}
	}
}

func TestPool(t *testing.T) {
	p := newPool(netip.MustParsePrefix("10.0.0.0/30"))
	var got []string
	for i := range 3 {
		a, err := p.allocate(fmt.Sprint("o", i))
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, a.String())
	}
	if fmt.Sprint(got) != "[10.0.0.1 10.0.0.2 10.0.0.3]" {
		t.Fatalf("allocated %v", got)
	}
	if _, err := p.allocate("o3"); err == nil || !strings.Contains(err.Error(), "10.0.0.0/30 is exhausted") {
		t.Fatalf("a full prefix: %v", err)
	}
	p.release(netip.MustParseAddr("10.0.0.2"), "other") // not its owner: kept
	if _, err := p.allocate("o3"); err == nil {
		t.Fatal("released by another owner")
	}
	p.release(netip.MustParseAddr("10.0.0.2"), "o1")
	if a, err := p.allocate("o4"); err != nil || a.String() != "10.0.0.2" {
		t.Fatalf("after a release: %v %v", a, err)
	}
	if held, _ := p.take(netip.MustParseAddr("192.168.0.1"), "x"); held {
		t.Fatal("an address outside the prefix is held")
	}
	if held, byOwner := p.take(netip.MustParseAddr("10.0.0.1"), "o0"); !held || !byOwner {
		t.Fatal("an owner's own address")
	}
}
