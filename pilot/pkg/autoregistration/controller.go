package autoregistration

import (
	"fmt"
	"math"
	"sync"
	"time"

	"golang.org/x/time/rate"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pkg/clock"
	"github.com/meshplane/istiod/pkg/config/schema/gvk"
	"github.com/meshplane/istiod/pkg/config/validation"
	"github.com/meshplane/istiod/pkg/diag"
	istiolog "github.com/meshplane/istiod/pkg/log"
)

var log = istiolog.RegisterScope("wle", "WorkloadEntry auto-registration and health")

// Options configure a Controller (read from the environment by the
// command; see docs/vms.md).
type Options struct {
	// InstanceID is this replica's identity (its pod name): the value of
	// istio.io/workloadController on the entries it controls.
	InstanceID string
	// AutoRegistration is PILOT_ENABLE_WORKLOAD_ENTRY_AUTOREGISTRATION.
	AutoRegistration bool
	// HealthChecks is PILOT_ENABLE_WORKLOAD_ENTRY_HEALTHCHECKS.
	HealthChecks bool
	// ValidateIdentity is ISTIO_WORKLOAD_ENTRY_VALIDATE_IDENTITY: a proxy
	// must have proved the entry's namespace and service account.
	ValidateIdentity bool
	// GracePeriod is PILOT_WORKLOAD_ENTRY_GRACE_PERIOD: how long an entry
	// outlives the last stream of its proxy.
	GracePeriod time.Duration
	// MaxConnectionAge is the xDS keepalive's maximum connection age
	// (0: none). An entry still marked connected 1.5 times that long after
	// its connection is left over by a replica that went away, and the
	// periodic sweep removes it.
	MaxConnectionAge time.Duration
	// Clock is the time source (nil: the real clock).
	Clock clock.Clock
	// Problems lists refused registrations on /debug/warningz (nil: none).
	Problems *diag.Board
	// Synced reports whether the store has loaded the cluster's entries;
	// the sweep at start waits for it (nil: already).
	Synced func() bool
}

// DefaultGracePeriod is Istio's PILOT_WORKLOAD_ENTRY_GRACE_PERIOD.
const DefaultGracePeriod = 10 * time.Second

// Controller creates, updates and deletes the WorkloadEntries of the
// proxies connected to this replica (see the package comment). Create it
// with New, hand it to the xDS server as its ConnectionObserver, and Run
// it.
type Controller struct {
	opts  Options
	store model.ConfigStore
	clk   clock.Clock
	// maxAge is 1.5 × MaxConnectionAge, or unlimited
	maxAge time.Duration

	// work holds the disconnections and health reports to write; cleanup
	// the deletions, rate-limited by cleanupLimit (Istio's 20 a second)
	work         *queue
	cleanup      *queue
	cleanupLimit *rate.Limiter

	// stop is Run's stop channel, set before Run starts the goroutines
	// that read it
	stop <-chan struct{}

	mu sync.Mutex
	// streams are the accepted streams that control an entry, by ID
	streams map[string]*streamInfo
	// byProxy counts a proxy's streams: its entry is disconnected only
	// when the last one ends
	byProxy map[proxyKey]map[string]struct{}
	// refused are the subjects of the problems reported for refused
	// registrations
	refused map[string]struct{}
	// pending are the disconnections queued and not yet written, by
	// namespace/entry (see finish)
	pending map[string]disconnection
}

// streamInfo is what the controller keeps of an accepted stream.
type streamInfo struct {
	id           string
	proxy        *model.Proxy
	connectedAt  time.Time
	nodeLocality string
	// entry is the WorkloadEntry the stream controls; autoCreated when it
	// was made from a group
	entry       string
	autoCreated bool
}

// proxyKey identifies one proxy across its streams, as Istio keys them.
type proxyKey struct{ network, ip, group, namespace string }

func keyOf(p *model.Proxy) proxyKey {
	k := proxyKey{network: p.Metadata.Network, group: p.Metadata.AutoRegisterGroup, namespace: p.Metadata.Namespace}
	if len(p.IPAddresses) > 0 {
		k.ip = p.IPAddresses[0]
	}
	return k
}

// New returns a controller that reads and writes WorkloadEntries and reads
// WorkloadGroups in store; nil when neither auto-registration nor health
// checks are enabled (a nil Controller observes nothing).
func New(store model.ConfigStore, opts Options) *Controller {
	if !opts.AutoRegistration && !opts.HealthChecks {
		return nil
	}
	if opts.Clock == nil {
		opts.Clock = clock.Real()
	}
	if opts.GracePeriod <= 0 {
		opts.GracePeriod = DefaultGracePeriod
	}
	maxAge := time.Duration(math.MaxInt64)
	if a := opts.MaxConnectionAge; a > 0 && a < math.MaxInt64/3*2 {
		maxAge = a + a/2
	}
	return &Controller{
		opts:         opts,
		store:        store,
		clk:          opts.Clock,
		maxAge:       maxAge,
		work:         newQueue("workloadentry", opts.Clock),
		cleanup:      newQueue("workloadentry cleanup", opts.Clock),
		cleanupLimit: rate.NewLimiter(rate.Limit(20), 1),
		streams:      map[string]*streamInfo{},
		byProxy:      map[proxyKey]map[string]struct{}{},
		refused:      map[string]struct{}{},
		pending:      map[string]disconnection{},
	}
}

// Run works until stop closes: the queues, the periodic sweep, and once
// the store has synced the sweep of the entries this replica controlled
// before it started, and the watch of WorkloadGroups (watchGroups). When
// stop closes, it writes the disconnection of
// the entries it still controls before it returns (see finish).
func (c *Controller) Run(stop <-chan struct{}) {
	if c == nil {
		return
	}
	c.stop = stop
	var wg sync.WaitGroup
	for _, f := range []func(<-chan struct{}){c.work.run, c.cleanup.run, c.periodicCleanup, c.startupCleanup, c.watchGroups} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f(stop)
		}()
	}
	wg.Wait()
	c.finish()
}

// OnConnect registers or takes over the proxy's WorkloadEntry, when it
// names a group (auto-registration) or an entry (health checks). An error
// refuses the stream, as Istio refuses it; it is also listed on
// /debug/warningz until the proxy connects successfully.
func (c *Controller) OnConnect(s model.ProxyStream) error {
	if c == nil || s.Proxy == nil || s.Proxy.Metadata == nil {
		return nil
	}
	info := &streamInfo{id: s.ID, proxy: s.Proxy, connectedAt: s.ConnectedAt, nodeLocality: s.NodeLocality}
	p, md := s.Proxy, s.Proxy.Metadata
	switch {
	case c.opts.AutoRegistration && md.AutoRegisterGroup != "":
		info.entry, info.autoCreated = EntryName(p), true
	case c.opts.HealthChecks && md.WorkloadEntry != "":
		e := c.store.Get(gvk.WorkloadEntry, md.WorkloadEntry, md.Namespace)
		if e == nil {
			err := fmt.Errorf("proxy metadata indicates that it must correspond to an existing WorkloadEntry, "+
				"however WorkloadEntry %s/%s is not found", md.Namespace, md.WorkloadEntry)
			c.refuse(p, "WorkloadEntry "+md.Namespace+"/"+md.WorkloadEntry, err)
			return err
		}
		if !healthEligible(e) {
			return nil
		}
		if err := c.canControl(p, *e); err != nil {
			c.refuse(p, "WorkloadEntry "+md.Namespace+"/"+md.WorkloadEntry, err)
			return err
		}
		info.entry = e.Name
	}
	if info.entry == "" {
		return nil
	}
	c.track(info)
	var err error
	if info.autoCreated {
		err = c.register(info)
	} else {
		_, err = c.markConnected(info)
	}
	if err != nil {
		c.untrack(info)
		log.Errorf("%s: %v", s.ID, err)
		obj := "WorkloadEntry " + md.Namespace + "/" + info.entry
		if info.autoCreated {
			obj = "WorkloadGroup " + md.Namespace + "/" + md.AutoRegisterGroup
		}
		c.refuse(p, obj, err)
		return err
	}
	c.accepted(p)
	return nil
}

// register creates the entry of an auto-registering proxy from its group,
// or marks the existing one connected to this replica.
func (c *Controller) register(s *streamInfo) error {
	p := s.proxy
	ns := p.Metadata.Namespace
	if e := c.store.Get(gvk.WorkloadEntry, s.entry, ns); e != nil {
		if err := c.canControl(p, *e); err != nil {
			return err
		}
		changed, err := c.markConnected(s)
		if err != nil {
			errorsTotal.Inc()
			return err
		}
		if changed {
			updatesTotal.Inc()
			log.Infof("updated auto-registered WorkloadEntry %s/%s as connected", ns, s.entry)
		}
		return nil
	}
	group := c.store.Get(gvk.WorkloadGroup, p.Metadata.AutoRegisterGroup, ns)
	if group == nil {
		errorsTotal.Inc()
		return status.Errorf(codes.FailedPrecondition, "auto-registration WorkloadEntry of %v failed: cannot find WorkloadGroup %s/%s",
			p.ID, ns, p.Metadata.AutoRegisterGroup)
	}
	entry := entryFromGroup(s.entry, *s, *group)
	if err := c.canControl(p, entry); err != nil {
		return err
	}
	setConnected(&entry, c.opts.InstanceID, s.connectedAt)
	// Istio leaves the entry to the API server, and relays its refusal;
	// an entry the API server accepts and our store would refuse to read
	// would be left behind, never cleaned up, so it is refused here (the
	// group validated: the fields at fault are the proxy's)
	if _, err := validation.ValidateWorkloadEntry(entry); err != nil {
		errorsTotal.Inc()
		return fmt.Errorf("auto-registration WorkloadEntry of %v failed: error creating WorkloadEntry: "+
			"WorkloadEntry %s/%s made of WorkloadGroup %s/%s and the proxy's metadata is invalid: %v",
			p.ID, ns, s.entry, ns, group.Name, err)
	}
	if _, err := c.store.Create(entry); err != nil {
		errorsTotal.Inc()
		return fmt.Errorf("auto-registration WorkloadEntry of %v failed: error creating WorkloadEntry: %v", p.ID, err)
	}
	successTotal.Inc()
	hc := ""
	if healthEligible(&entry) {
		hc = " with health checking enabled"
	}
	log.Infof("auto-registered WorkloadEntry %s/%s%s", ns, s.entry, hc)
	return nil
}

// OnDisconnect queues the disconnection of the proxy's entry when its last
// stream to this replica ends.
func (c *Controller) OnDisconnect(s model.ProxyStream) {
	if c == nil {
		return
	}
	info, last := c.untrack(&streamInfo{id: s.ID})
	if info == nil || !last {
		return
	}
	item := disconnection{entry: info.entry, namespace: info.proxy.Metadata.Namespace, autoCreated: info.autoCreated,
		connectedAt: info.connectedAt, disconnectedAt: c.clk.Now()}
	c.queueDisconnect(item)
}

// track records an accepted stream.
func (c *Controller) track(s *streamInfo) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.streams[s.id] = s
	k := keyOf(s.proxy)
	if c.byProxy[k] == nil {
		c.byProxy[k] = map[string]struct{}{}
	}
	c.byProxy[k][s.id] = struct{}{}
}

// untrack forgets a stream; it returns what was kept of it (nil: it was
// not tracked) and whether it was its proxy's last.
func (c *Controller) untrack(s *streamInfo) (*streamInfo, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	info := c.streams[s.id]
	if info == nil {
		return nil, false
	}
	delete(c.streams, s.id)
	k := keyOf(info.proxy)
	delete(c.byProxy[k], s.id)
	if len(c.byProxy[k]) > 0 {
		return info, false
	}
	delete(c.byProxy, k)
	return info, true
}

// controls reports whether a stream of this replica controls the entry.
func (c *Controller) controls(namespace, entry string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range c.streams {
		if s.entry == entry && s.proxy.Metadata.Namespace == namespace {
			return true
		}
	}
	return false
}

// stream returns what is kept of an accepted stream (nil: none).
func (c *Controller) stream(id string) *streamInfo {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.streams[id]
}
