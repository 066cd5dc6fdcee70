package ipallocate

import (
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"
	"istio.io/api/label"
	networking "istio.io/api/networking/v1alpha3"
	"k8s.io/client-go/util/workqueue"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/config/host"
	"github.com/meshplane/istiod/pkg/config/schema/gvk"
	"github.com/meshplane/istiod/pkg/log"
)

var scope = log.RegisterScope("ip-autoallocate", "addresses of ServiceEntries without one")

// Istio's defaults of PILOT_IP_AUTOALLOCATE_IPV4_PREFIX and
// PILOT_IP_AUTOALLOCATE_IPV6_PREFIX.
var (
	DefaultIPv4Prefix = netip.MustParsePrefix("240.240.0.0/16")
	DefaultIPv6Prefix = netip.MustParsePrefix("2001:2::/48")
)

// maxAttempts is how often an item is tried before it is dropped (as
// Istio's queue of this controller).
const maxAttempts = 5

// Options configure a Controller.
type Options struct {
	// Store holds the ServiceEntries and writes their status.
	Store model.ConfigStoreController
	// IPv4 and IPv6 are the prefixes addresses come from (zero: Istio's
	// defaults).
	IPv4, IPv6 netip.Prefix
	// Retry is the backoff of a failed item (nil: 5ms doubling to 1000s,
	// client-go's default).
	Retry workqueue.TypedRateLimiter[item]
}

// Controller writes addresses into the status of ServiceEntries that
// have none of their own, so that a proxy capturing DNS can route TCP to
// them: status.addresses lists, for each host, one address of each
// family, as Istio's IP autoallocate controller writes them (the
// ServiceEntry registry reads them back, conversion.go). It works only
// while Run runs: the leader of Istio's istio-ip-autoallocate election
// runs it.
type Controller struct {
	opts Options

	mu sync.Mutex
	// term is the queue of the leadership term in progress (nil: none)
	term workqueue.TypedRateLimitingInterface[item]
}

// item is a ServiceEntry to reconcile ("<namespace>/<name>"), or, with
// conflict set, addresses ("a,b") that more than one ServiceEntry holds.
type item struct {
	key      string
	conflict string
}

// New builds a controller on the store; call before the store runs (it
// registers its handler).
func New(opts Options) *Controller {
	if !opts.IPv4.IsValid() {
		opts.IPv4 = DefaultIPv4Prefix
	}
	if !opts.IPv6.IsValid() {
		opts.IPv6 = DefaultIPv6Prefix
	}
	if opts.Retry == nil {
		opts.Retry = workqueue.DefaultTypedControllerRateLimiter[item]()
	}
	c := &Controller{opts: opts}
	opts.Store.RegisterEventHandler(gvk.ServiceEntry, func(_, cur config.Config, _ model.Event) {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.term != nil {
			c.term.Add(item{key: cur.Namespace + "/" + cur.Name})
		}
	})
	return c
}

// Run allocates until stop closes: a leadership term. Each term starts
// afresh, as Istio's does: the addresses in use are read from every
// ServiceEntry before anything is allocated, then every ServiceEntry is
// reconciled, then each one that changes.
func (c *Controller) Run(stop <-chan struct{}) {
	for !c.opts.Store.HasSynced() {
		select {
		case <-stop:
			return
		case <-time.After(50 * time.Millisecond):
		}
	}
	t := &term{c: c, v4: newPool(c.opts.IPv4), v6: newPool(c.opts.IPv6),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(c.opts.Retry, workqueue.TypedRateLimitingQueueConfig[item]{Name: "ip-autoallocate"})}
	c.mu.Lock()
	c.term = t.queue
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		c.term = nil
		c.mu.Unlock()
	}()
	entries := c.opts.Store.List(gvk.ServiceEntry, "")
	for _, se := range entries {
		key := se.Namespace + "/" + se.Name
		t.holdOrConflict(specAddresses(se), key)
		t.holdOrConflict(statusAddresses(se), key)
	}
	for _, se := range entries {
		t.queue.Add(item{key: se.Namespace + "/" + se.Name})
	}
	scope.Debugf("%d ServiceEntries read before allocating", len(entries))
	go func() {
		<-stop
		t.queue.ShutDown()
	}()
	for t.next() {
	}
}

// term is the state of one leadership term.
type term struct {
	c      *Controller
	v4, v6 *pool
	queue  workqueue.TypedRateLimitingInterface[item]
}

func (t *term) next() bool {
	it, shutdown := t.queue.Get()
	if shutdown {
		return false
	}
	defer t.queue.Done(it)
	var err error
	if it.conflict != "" {
		err = t.resolve(it)
	} else {
		err = t.reconcile(it.key)
	}
	switch {
	case err == nil:
		t.queue.Forget(it)
	case t.queue.NumRequeues(it) < maxAttempts-1:
		scope.Debugf("retrying %v: %v", it, err)
		t.queue.AddRateLimited(it)
	default:
		scope.Errorf("giving up on %v after %d attempts: %v", it, maxAttempts, err)
		t.queue.Forget(it)
	}
	return true
}

func (t *term) get(key string) *config.Config {
	ns, name, _ := strings.Cut(key, "/")
	return t.c.opts.Store.Get(gvk.ServiceEntry, name, ns)
}

func (t *term) reconcile(key string) error {
	se := t.get(key)
	if se == nil {
		// deleted: its addresses stay taken for this term, as in Istio
		return nil
	}
	if !Wants(*se) {
		t.holdOrConflict(specAddresses(*se), key)
		if old := statusAddresses(*se); len(old) > 0 {
			// addresses it no longer needs (a NONE resolution, addresses
			// of its own, the opt-out label)
			if err := t.write(*se, []*networking.ServiceEntryAddress{}); err != nil {
				return err
			}
			t.release(old, key)
		}
		return nil
	}
	addrs, fresh := t.assign(*se, false)
	if addrs == nil {
		return nil
	}
	if err := t.write(*se, addrs); err != nil {
		t.release(fresh, key)
		return err
	}
	return nil
}

// assign is the status addresses se should have, nil when it has them:
// for each host allocation applies to, in the order of spec.hosts, the
// addresses it holds, or (all of them when reassign) a new one of each
// family. fresh are those allocated now.
func (t *term) assign(se config.Config, reassign bool) (addrs []*networking.ServiceEntryAddress, fresh []netip.Addr) {
	key := se.Namespace + "/" + se.Name
	held := byHost(se)
	if !reassign {
		var all []netip.Addr
		for _, h := range sortedHosts(held) {
			all = append(all, held[h]...)
		}
		t.holdOrConflict(all, key)
	}
	hosts := allocatedHosts(se)
	if !reassign && sameSet(hosts, held) {
		return nil, nil
	}
	addrs = []*networking.ServiceEntryAddress{}
	for _, h := range hosts {
		ips, ok := held[h]
		if !ok || reassign {
			ips = nil
			for _, p := range []*pool{t.v4, t.v6} {
				a, err := p.allocate(key)
				if err != nil {
					scope.Errorf("ServiceEntry %s host %s: no address to allocate: %v", key, h, err)
					continue
				}
				ips = append(ips, a)
				fresh = append(fresh, a)
			}
		}
		for _, a := range ips {
			addrs = append(addrs, &networking.ServiceEntryAddress{Value: a.String(), Host: h})
		}
	}
	return addrs, fresh
}

// resolve settles addresses several ServiceEntries hold: of those holding
// one as allocated, the oldest keeps it and the others get new addresses;
// when a ServiceEntry declares it as its own, every allocated holder moves.
func (t *term) resolve(it item) error {
	var conflicting []netip.Addr
	for _, s := range strings.Split(it.conflict, ",") {
		if a, err := netip.ParseAddr(s); err == nil {
			conflicting = append(conflicting, a)
		}
	}
	var allocated []config.Config
	declared := false
	for _, se := range t.c.opts.Store.List(gvk.ServiceEntry, "") {
		if slices.ContainsFunc(statusAddresses(se), func(a netip.Addr) bool { return slices.Contains(conflicting, a) }) {
			allocated = append(allocated, se)
		}
		if slices.ContainsFunc(specAddresses(se), func(a netip.Addr) bool { return slices.Contains(conflicting, a) }) {
			declared = true
		}
	}
	slices.SortStableFunc(allocated, func(a, b config.Config) int { return a.CreationTimestamp.Compare(b.CreationTimestamp) })
	start := 1
	if declared {
		start = 0
	}
	var errs []string
	for _, se := range allocated[min(start, len(allocated)):] {
		key := se.Namespace + "/" + se.Name
		scope.Warnf("ServiceEntry %s: reassigned, its address is another's", key)
		addrs, fresh := t.assign(se, true)
		if err := t.write(se, addrs); err != nil {
			t.release(fresh, key)
			errs = append(errs, key+": "+err.Error())
		}
	}
	if len(errs) > 0 {
		return errString(strings.Join(errs, "; "))
	}
	return nil
}

type errString string

func (e errString) Error() string { return string(e) }

// holdOrConflict records addrs as owner's and queues those another holds.
func (t *term) holdOrConflict(addrs []netip.Addr, owner string) {
	var taken []string
	for _, a := range addrs {
		a = a.Unmap()
		p := t.v4
		if a.Is6() {
			p = t.v6
		}
		if held, byOwner := p.take(a, owner); held && !byOwner {
			taken = append(taken, a.String())
		}
	}
	if len(taken) > 0 {
		t.queue.Add(item{key: owner, conflict: strings.Join(taken, ",")})
	}
}

func (t *term) release(addrs []netip.Addr, owner string) {
	for _, a := range addrs {
		a = a.Unmap()
		if a.Is6() {
			t.v6.release(a, owner)
		} else {
			t.v4.release(a, owner)
		}
	}
}

// write stores addrs as se's status addresses, keeping the rest of its
// status; the store refuses it if se changed since it was read.
func (t *term) write(se config.Config, addrs []*networking.ServiceEntryAddress) error {
	st := &networking.ServiceEntryStatus{}
	if old, ok := se.Status.(*networking.ServiceEntryStatus); ok && old != nil {
		st = proto.Clone(old).(*networking.ServiceEntryStatus)
	}
	st.Addresses = addrs
	se.Status = st
	_, err := t.c.opts.Store.UpdateStatus(se)
	return err
}

// Wants tells whether se gets allocated addresses: it declares none, its
// resolution is not NONE, and its label networking.istio.io/enable-autoallocate-ip
// is not false.
func Wants(se config.Config) bool {
	spec, ok := se.Spec.(*networking.ServiceEntry)
	if !ok {
		return false
	}
	if spec.GetResolution() == networking.ServiceEntry_NONE || len(spec.GetAddresses()) > 0 {
		return false
	}
	v, ok := se.Labels[label.NetworkingEnableAutoallocateIp.Name]
	return !ok || !strings.EqualFold(v, "false")
}

// allocatedHosts are the hosts of se that get addresses, in spec order
// without repeats: wildcard hosts only with DYNAMIC_DNS resolution.
func allocatedHosts(se config.Config) []string {
	spec := se.Spec.(*networking.ServiceEntry)
	var out []string
	for _, h := range spec.GetHosts() {
		if host.IsWildcard(h) && spec.GetResolution() != networking.ServiceEntry_DYNAMIC_DNS {
			continue
		}
		if !slices.Contains(out, h) {
			out = append(out, h)
		}
	}
	return out
}

// byHost are se's status addresses by host (those that parse).
func byHost(se config.Config) map[string][]netip.Addr {
	out := map[string][]netip.Addr{}
	st, ok := se.Status.(*networking.ServiceEntryStatus)
	if !ok || st == nil {
		return out
	}
	for _, a := range st.GetAddresses() {
		if ip, err := netip.ParseAddr(a.GetValue()); err == nil {
			out[a.GetHost()] = append(out[a.GetHost()], ip)
		}
	}
	return out
}

func sortedHosts(m map[string][]netip.Addr) []string {
	out := make([]string, 0, len(m))
	for h := range m {
		out = append(out, h)
	}
	slices.Sort(out)
	return out
}

func sameSet(hosts []string, held map[string][]netip.Addr) bool {
	if len(hosts) != len(held) {
		return false
	}
	for _, h := range hosts {
		if _, ok := held[h]; !ok {
			return false
		}
	}
	return true
}

func statusAddresses(se config.Config) []netip.Addr {
	m := byHost(se)
	var out []netip.Addr
	for _, h := range sortedHosts(m) {
		out = append(out, m[h]...)
	}
	return out
}

// specAddresses are the single addresses se declares (CIDRs are not
// addresses one could be handed).
func specAddresses(se config.Config) []netip.Addr {
	spec, ok := se.Spec.(*networking.ServiceEntry)
	if !ok {
		return nil
	}
	var out []netip.Addr
	for _, s := range spec.GetAddresses() {
		if a, err := netip.ParseAddr(s); err == nil {
			out = append(out, a)
		}
	}
	return out
}
