package main

import (
	"github.com/meshplane/istiod/tests/testproc"

	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/meshplane/istiod/tests/procstat"
)

// Options of one load test run.
type Options struct {
	Proxies    int // simulated sidecars
	Services   int // ServiceEntries, each with a DestinationRule and a VirtualService
	Namespaces int // services and sidecars are spread over these
	// DialConcurrency bounds the connections being opened at once.
	DialConcurrency int
	// MaxSyncing, when positive, bounds the sidecars between their first
	// dial and full config: the next connects when one is done, a ramp
	// rather than all at once (0: all at once).
	MaxSyncing int
	// ValidateSidecars is how many sidecars (spread evenly) decode every
	// resource and run ValidateAll on it; the wire rules are checked by all.
	ValidateSidecars int
	// Timeout bounds each phase; it guards against a hang and is not a
	// performance target.
	Timeout time.Duration
	// Binary is a built istiod of this repository, used when Istiod is
	// empty; both empty: build cmd/istiod into the work dir.
	Binary string
	// Istiod lists the control planes to measure one after the other on
	// the same mesh (see parseTargets): "self", "peer", paths, flavor=path.
	Istiod string
	// Kube serves the mesh from a real kube-apiserver + etcd (tests/kube)
	// instead of a directory of files.
	Kube bool
	// Repeat is how many times the VirtualService is changed (each change
	// waits for every sidecar); the report gives the median. Default 1.
	Repeat int
	// Settle is how long istiod idles after /ready before its baseline
	// memory (no sidecar connected) is read, and after the last change
	// round before its steady-state memory is.
	Settle time.Duration
	// Keep leaves the work directory (mesh, istiod log) in place.
	Keep bool
	// Log receives progress lines; nil discards them.
	Log io.Writer
	// IstiodHeapProfile, when set, is where istiod's heap profile is
	// written at the end, with every sidecar still connected (one file
	// per control plane: the second gets suffix .1, and so on).
	IstiodHeapProfile string
	// IstiodCPUProfile, when set, is where istiod's CPU profile of the
	// change rounds is written (2 s per round are recorded).
	IstiodCPUProfile string
	// Window is each sidecar's fixed HTTP/2 flow-control window, per
	// stream and per connection, in bytes: what a control plane may send it
	// ahead of what it has read. gRPC's default grows the window with its
	// estimate of the bandwidth, and on loopback a thousand sidecars then
	// buffer gigabytes; a fixed one bounds the tool's memory at about
	// Proxies × Window and is the same for every control plane. 0 is
	// gRPC's default (to measure what the estimate costs).
	Window int32
	// StormDuration, when positive, adds the config storm after the change
	// rounds: StormRate edits a second (default 10) for this long, then
	// the time until every sidecar has the last (storm.go).
	StormDuration time.Duration
	StormRate     int
	// ChurnPods, when positive (Kubernetes mode), adds the pod churn after
	// the change rounds: that many pods behind ChurnServices Services
	// (default 10) replaced as a rolling restart replaces them,
	// ChurnInterval (default 100 ms) between a Service's updates (churn.go).
	ChurnPods     int
	ChurnServices int
	ChurnInterval time.Duration
}

// DefaultOptions is the scenario of the issue: 1,000 sidecars, 100 services.
func DefaultOptions() Options {
	return Options{Proxies: 1000, Services: 100, Namespaces: 10, DialConcurrency: 64, ValidateSidecars: 50,
		Timeout: 2 * time.Minute, Repeat: 1, Settle: 2 * time.Second, Window: 1 << 20}
}

// Report holds the figures of one control plane's run.
type Report struct {
	Name   string // the control plane
	Flavor flavor
	Source string // "files" or "kube-apiserver"

	Proxies, Services, Namespaces int

	Full      int             // sidecars that got full config
	FullEach  []time.Duration // per sidecar: dial start to full config
	FullTotal time.Duration   // first dial to the last sidecar's full config

	Converged     int             // sidecars that got the changed route in every round
	ConvergeEach  []time.Duration // per sidecar and round: edit to the new route
	ConvergeTotal time.Duration   // edit to the last sidecar's new route, median of the rounds
	Rounds        []time.Duration // edit to the last sidecar's new route, per round

	// Partial counts sidecars whose subscriptions were all answered before
	// the mesh was whole (the target route missing): istiod served them an
	// incomplete mesh first. Not a failure; they are counted full when the
	// rest arrives.
	Partial        int
	PartialExample string

	Failures   map[string]int // error message -> sidecars
	WireErrors int
	Aborted    string // why the run stopped early, if it did

	Responses                    int64
	Resources                    [4]int64 // CDS, EDS, LDS, RDS resources received in the first phase
	Bytes                        [4]int64
	ChangeResponses, ChangeBytes int64 // received in the change phase (all rounds)

	IstiodStartupCPU, IstiodConnectCPU, IstiodChangeCPU float64 // seconds
	// memory: with no sidecar (after Settle) and at the end, with all
	// connected; heap is the live heap after a forced GC (HeapAlloc of
	// /debug/pprof/heap), zero when not available
	IstiodBaselineRSS, IstiodBaselineHeap int64
	IstiodRSS, IstiodPeakRSS, IstiodHeap  int64
	// IstiodRuntime are istiod's runtime.MemStats at the end (after a GC),
	// by name: where its RSS goes beyond the live heap.
	IstiodRuntime                 map[string]int64
	ToolRSS, ToolPeakRSS          int64
	ToolConnectCPU, ToolChangeCPU float64
	// ToolValidateCPU is what the validating sidecars' full decoding and
	// ValidateAll took, done after each phase's figures were taken and
	// left out of ToolConnectCPU and ToolChangeCPU
	ToolValidateCPU float64
	// PushStages are istiod's own histograms (pushStageMetrics, which
	// both control planes export) over the change rounds
	PushStages map[string]histogram
	ReadyAfter time.Duration
	// Storm is the config storm's figures (nil without one)
	Storm *StormReport
	// Churn is the pod churn's (nil without one)
	Churn *ChurnReport
}

// OK reports a run in which every sidecar got full config and the change,
// with no wire-rule error.
func (r *Report) OK() bool {
	return r.Aborted == "" && len(r.Failures) == 0 && r.WireErrors == 0 &&
		r.Full == r.Proxies && r.Converged == r.Proxies && (r.Storm == nil || r.Storm.Converged == r.Proxies) &&
		(r.Churn == nil || (r.Churn.Converged == r.Proxies && r.Churn.EmptyAssignments == 0))
}

// world is what the control planes of one run share: the mesh, where it is
// served from, and how to change it.
type world struct {
	work     string
	m        *mesh
	meshFile string
	src      source
	km       *kubeMesh // nil: files
}

// change sets the target VirtualService to the weights of round r.
func (w *world) change(ctx context.Context, r int) error {
	if w.km != nil {
		return w.km.change(ctx, r)
	}
	return w.m.change(r)
}

func (w *world) sourceName() string {
	if w.km != nil {
		return "kube-apiserver"
	}
	return "files"
}

// Run measures one istiod of this repository (o.Binary, or built) on the
// mesh given as files: it generates the mesh, starts istiod, connects the
// sidecars, waits for full config, changes one VirtualService (o.Repeat
// times) and waits for all sidecars to get it. An error means the run
// could not be set up; sidecar failures are in the report.
func Run(ctx context.Context, o Options) (*Report, error) {
	o.Istiod, o.Kube = "", false
	rs, err := RunAll(ctx, o)
	if err != nil {
		return nil, err
	}
	return rs[0], nil
}

// RunAll measures each control plane of o.Istiod in turn, on one mesh (one
// directory, or one API server holding the objects): the same scenario
// each, with one stopped before the next starts.
func RunAll(ctx context.Context, o Options) ([]*Report, error) {
	if o.Proxies < 1 || o.Services < 1 || o.Namespaces < 1 || o.DialConcurrency < 1 {
		return nil, errors.New("proxies, services, namespaces and dial concurrency must be positive")
	}
	if o.Repeat < 1 {
		o.Repeat = 1
	}
	if o.Window > 0 && o.Window < 64<<10 {
		// gRPC's smallest fixed window (below it the estimate is used)
		o.Window = 64 << 10
	}
	if o.Repeat > maxRounds {
		return nil, fmt.Errorf("at most %d repeats", maxRounds)
	}
	if o.ChurnPods > 0 {
		if !o.Kube {
			return nil, errors.New("the pod churn needs an API server: run with -kube")
		}
		if o.ChurnServices < 1 {
			o.ChurnServices = 10
		}
		if o.ChurnInterval <= 0 {
			o.ChurnInterval = 100 * time.Millisecond
		}
		if o.ChurnServices > 250 || o.ChurnPods/o.ChurnServices >= 250 {
			return nil, errors.New("the pod churn takes at most 250 services of fewer than 250 pods each")
		}
	}
	if o.StormDuration > 0 && o.Repeat >= stormRound {
		return nil, fmt.Errorf("a storm needs fewer than %d repeats (its last edit has the weights of round %d)", stormRound, stormRound)
	}
	logf := func(format string, args ...any) {
		if o.Log != nil {
			fmt.Fprintf(o.Log, "loadtest: "+format+"\n", args...)
		}
	}
	spec := o.Istiod
	if spec == "" && o.Binary != "" {
		spec = string(flavorOurs) + "=" + o.Binary
	}
	targets, err := parseTargets(spec)
	if err != nil {
		return nil, err
	}
	for _, t := range targets {
		if t.flavor == flavorIstio && !o.Kube {
			return nil, fmt.Errorf("%s needs an API server: run with -kube", t.name)
		}
	}
	work, err := os.MkdirTemp("", "istiod-loadtest")
	if err != nil {
		return nil, err
	}
	if o.Keep {
		logf("work directory %s", work)
	} else {
		defer os.RemoveAll(work)
	}
	for i := range targets {
		if targets[i].bin == "" {
			logf("building istiod")
			if targets[i].bin, err = testproc.BuildIstiod(work); err != nil {
				return nil, err
			}
		}
	}
	w := &world{work: work, meshFile: filepath.Join(work, "mesh.yaml"),
		m: &mesh{dir: filepath.Join(work, "config"), services: o.Services, namespaces: o.Namespaces, proxies: o.Proxies}}
	if err := os.WriteFile(w.meshFile, []byte(meshConfig), 0o644); err != nil {
		return nil, err
	}
	if o.Kube {
		t0 := time.Now()
		env, err := startKube(filepath.Join(work, "kube"))
		if err != nil {
			return nil, fmt.Errorf("starting kube-apiserver: %v", err)
		}
		defer env.Stop()
		if w.km, err = newKubeMesh(env, w.m); err != nil {
			return nil, err
		}
		n, err := w.km.create(ctx)
		if err != nil {
			return nil, err
		}
		if o.ChurnPods > 0 {
			if err := w.km.createChurn(ctx, o); err != nil {
				return nil, err
			}
		}
		w.src.kubeconfig = env.Kubeconfig
		logf("kube-apiserver %s up, %d mesh objects created in %v", env.RESTConfig.Host, n, time.Since(t0).Round(time.Millisecond))
	} else {
		if err := w.m.write(); err != nil {
			return nil, err
		}
		w.src.configDir = w.m.dir
	}
	var out []*Report
	for i, t := range targets {
		profile := o.IstiodHeapProfile
		if profile != "" && i > 0 {
			profile += "." + strconv.Itoa(i)
		}
		r, err := runOne(ctx, o, w, t, filepath.Join(work, fmt.Sprintf("%d-%s", i, t.flavor)), profile, logf)
		if err != nil {
			return out, fmt.Errorf("%s: %w", t.name, err)
		}
		out = append(out, r)
		if ctx.Err() != nil {
			return out, ctx.Err()
		}
	}
	return out, nil
}

// runOne runs the scenario against one control plane, started in dir.
func runOne(ctx context.Context, o Options, w *world, t target, dir, heapProfile string, logf func(string, ...any)) (*Report, error) {
	// the previous control plane's rounds left the target edited
	if err := w.change(ctx, 0); err != nil {
		return nil, err
	}
	if o.ChurnPods > 0 {
		if err := w.km.resetChurn(ctx, o); err != nil {
			return nil, err
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	t0 := time.Now()
	d, err := startIstiod(t, w.src, w.meshFile, dir)
	if err != nil {
		return nil, err
	}
	defer d.stop()
	if err := d.waitReady(o.Timeout); err != nil {
		return nil, err
	}
	r := &Report{Name: t.name, Flavor: t.flavor, Source: w.sourceName(), Proxies: o.Proxies, Services: o.Services,
		Namespaces: o.Namespaces, Failures: map[string]int{}, ReadyAfter: time.Since(t0)}
	pid := d.pid()
	logf("%s ready after %v (pid %d, xDS on %s)", t.name, r.ReadyAfter.Round(time.Millisecond), pid, d.grpc)
	select {
	case <-time.After(o.Settle):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	r.IstiodStartupCPU, _ = cpuSeconds(pid)
	r.IstiodBaselineRSS, _ = procstat.Memory(strconv.Itoa(pid))
	r.IstiodBaselineHeap, _ = d.liveHeap()
	logf("baseline RSS %s, live heap %s; connecting %d sidecars", mib(r.IstiodBaselineRSS), mib(r.IstiodBaselineHeap), o.Proxies)

	f := &fleet{o: o, d: d, r: r, events: make(chan proxyEvent, (5+o.Repeat)*o.Proxies), count: &counters{},
		failed: map[int]bool{}, full: map[int]bool{}, versioned: t.flavor == flavorOurs}
	cpu := newCPUMeter(pid)
	f.start(ctx, w.m)
	defer f.stop()
	f.fullConfig(ctx)
	r.IstiodConnectCPU, r.ToolConnectCPU = cpu.lap()
	r.ToolValidateCPU = f.checkBacklogs()
	cpu.lap() // the checks belong to neither phase
	r.Responses = f.count.responses.Load()
	for i := range r.Resources {
		r.Resources[i], r.Bytes[i] = f.count.resources[i].Load(), f.count.bytes[i].Load()
	}
	logf("%d sidecars have full config after %v", r.Full, r.FullTotal.Round(time.Millisecond))

	r.Converged = r.Proxies
	var cpuProfileDone chan struct{}
	if o.IstiodCPUProfile != "" {
		path := o.IstiodCPUProfile + "." + string(t.flavor)
		cpuProfileDone = make(chan struct{})
		go func() {
			defer close(cpuProfileDone)
			if err := d.cpuProfile(2*o.Repeat, path); err != nil {
				logf("istiod CPU profile: %v", err)
			}
		}()
	}
	stagesBefore, stagesErr := d.histograms(pushStageMetrics)
	var changeChecks float64
	for round := 1; round <= o.Repeat && r.Full > 0 && r.Aborted == ""; round++ {
		if round > 1 {
			// let the last round's ACKs and pushes settle
			time.Sleep(500 * time.Millisecond)
		}
		n, total, err := f.change(ctx, w, round)
		if err != nil {
			return nil, err
		}
		changeChecks += f.checkBacklogs()
		r.Converged = min(r.Converged, n)
		r.Rounds = append(r.Rounds, total)
		logf("round %d: %d sidecars have the new routes after %v", round, n, total.Round(time.Millisecond))
	}
	if len(r.Rounds) == 0 {
		r.Converged = 0
	}
	r.ConvergeTotal = median(r.Rounds)
	if stagesErr == nil {
		r.PushStages = d.stagesSince(stagesBefore)
	}
	if cpuProfileDone != nil {
		<-cpuProfileDone
	}
	changeChecks += f.checkBacklogs() // what came after the last round
	r.ToolValidateCPU += changeChecks
	r.IstiodChangeCPU, r.ToolChangeCPU = cpu.lap()
	r.ToolChangeCPU -= changeChecks
	r.ChangeResponses = f.count.responses.Load() - r.Responses
	for i := range f.count.bytes {
		r.ChangeBytes += f.count.bytes[i].Load() - r.Bytes[i]
	}
	if o.ChurnPods > 0 && r.Full > 0 && r.Aborted == "" {
		time.Sleep(500 * time.Millisecond) // the last round's ACKs
		logf("pod churn: %d pods behind %d Services replaced", o.ChurnPods, o.ChurnServices)
		cr, err := f.churn(ctx, w, cpu)
		if err != nil {
			return nil, err
		}
		r.Churn = cr
		logf("churn: %d updates in %v; %d sidecars have the final endpoints %v after the last; %d empty assignments, %d non-EDS resources",
			cr.Updates, cr.Duration.Round(time.Millisecond), cr.Converged, cr.AfterEnd.Round(time.Millisecond), cr.EmptyAssignments, cr.NonEDS)
		r.ToolValidateCPU += f.checkBacklogs()
		cpu.lap()
	}
	if o.StormDuration > 0 && r.Full > 0 && r.Aborted == "" {
		time.Sleep(500 * time.Millisecond) // the last round's ACKs
		logf("config storm: %d edits a second for %v", max(o.StormRate, 1), o.StormDuration)
		sr, err := f.storm(ctx, w, pid, cpu)
		if err != nil {
			return nil, err
		}
		r.ToolValidateCPU += f.checkBacklogs()
		cpu.lap()
		r.Storm = sr
		logf("storm: %d edits in %v; %d sidecars have the last %v after it", sr.Edits, sr.Duration.Round(time.Millisecond),
			sr.Converged, sr.AfterEnd.Round(time.Millisecond))
	}
	// the steady state, as for the baseline: after the same idle time
	// (the peak is reported apart)
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-time.After(o.Settle):
	}
	r.IstiodRSS, r.IstiodPeakRSS = procstat.Memory(strconv.Itoa(pid))
	if ms, err := d.memStats(); err == nil {
		r.IstiodHeap, r.IstiodRuntime = ms["HeapAlloc"], ms
	}
	if heapProfile != "" {
		if err := d.heapProfile(heapProfile); err != nil {
			logf("istiod heap profile: %v", err)
		}
	}
	runtime.GC()
	r.ToolRSS, r.ToolPeakRSS = procstat.Memory("self")
	f.drain()
	return r, nil
}

// pushStageMetrics are the histograms of Istio's push pipeline, in its
// order: the debounce, the PushContext, a proxy's wait in the push queue,
// one type's generation and send, and a proxy's whole push from the
// change.
var pushStageMetrics = []string{"pilot_debounce_time", "pilot_pushcontext_init_seconds", "pilot_proxy_queue_time",
	"pilot_xds_push_time", "pilot_proxy_convergence_time"}

// stagesSince is istiod's push-stage histograms since before (nil when
// they cannot be read).
func (d *daemon) stagesSince(before map[string]histogram) map[string]histogram {
	after, err := d.histograms(pushStageMetrics)
	if err != nil || before == nil {
		return nil
	}
	out := map[string]histogram{}
	for _, n := range pushStageMetrics {
		out[n] = after[n].sub(before[n])
	}
	return out
}

// median of durations; the lower middle one for an even count.
func median(d []time.Duration) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[(len(s)-1)/2]
}

// cpuMeter reads istiod's and the tool's CPU seconds per phase.
type cpuMeter struct {
	pid          int
	istiod, tool float64
}

func newCPUMeter(pid int) *cpuMeter {
	m := &cpuMeter{pid: pid}
	m.lap()
	return m
}

// lap returns the CPU seconds of istiod and of the tool since the last lap.
func (m *cpuMeter) lap() (istiod, tool float64) {
	i, _ := cpuSeconds(m.pid)
	t, _ := cpuSeconds(os.Getpid())
	istiod, tool = i-m.istiod, t-m.tool
	m.istiod, m.tool = i, t
	return istiod, tool
}

// fleet is the simulated sidecars and what the runner learned of them.
type fleet struct {
	o       Options
	d       *daemon
	r       *Report
	proxies []*proxy
	events  chan proxyEvent
	count   *counters
	round   atomic.Int32 // the change round under way, read by the sidecars
	// churning is set once the pod churn's updates begin (churn.go)
	churning atomic.Bool
	// versioned: the control plane must version every delta resource
	versioned bool
	failed    map[int]bool // sidecars that failed
	full      map[int]bool // sidecars that got full config
	started   time.Time
	cancel    context.CancelFunc
	wg        sync.WaitGroup
}

// start connects every sidecar, at most DialConcurrency at a time; a spread
// of ValidateSidecars of them validate every resource.
func (f *fleet) start(ctx context.Context, m *mesh) {
	ctx, f.cancel = context.WithCancel(ctx)
	slots := make(chan struct{}, f.o.DialConcurrency)
	decoders := make(chan struct{}, runtime.GOMAXPROCS(0))
	var syncing chan struct{}
	if f.o.MaxSyncing > 0 {
		syncing = make(chan struct{}, f.o.MaxSyncing)
	}
	step := f.o.Proxies + 1 // validate none
	if f.o.ValidateSidecars > 0 {
		step = max(1, f.o.Proxies/f.o.ValidateSidecars)
	}
	f.proxies = make([]*proxy, f.o.Proxies)
	f.started = time.Now()
	for i := range f.proxies {
		p := &proxy{id: i, nodeID: m.nodeID(i), meta: m.metadata(i), validate: i%step == 0 && i/step < f.o.ValidateSidecars,
			targetVHost: m.targetVirtualHost(), targetCluster: m.targetCluster(), events: f.events, count: f.count,
			round: &f.round, work: decoders, versioned: f.versioned, syncSlots: syncing, window: f.o.Window,
			opts: &f.o, churning: &f.churning}
		f.proxies[i] = p
		f.wg.Add(1)
		go func() {
			defer f.wg.Done()
			p.run(ctx, f.d.grpc, slots)
		}()
	}
}

// stop closes every stream and waits for the sidecars to end.
func (f *fleet) stop() {
	f.cancel()
	f.wg.Wait()
}

func (f *fleet) fail(e proxyEvent) {
	if f.failed[e.id] {
		return
	}
	f.failed[e.id] = true
	var we *wireError
	if errors.As(e.err, &we) {
		f.r.WireErrors++
	}
	f.r.Failures[e.err.Error()]++
}

// wait collects events until want sidecars (of those concerns selects)
// reported kind or failed, or the phase times out; on says whether an
// event of kind counts.
func (f *fleet) wait(ctx context.Context, kind eventKind, want int, concerns func(id int) bool, on func(proxyEvent) bool) {
	deadline := time.NewTimer(f.o.Timeout)
	defer deadline.Stop()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	done := map[int]bool{}
	for len(done) < want {
		select {
		case e := <-f.events:
			switch e.kind {
			case evFailed:
				f.fail(e)
			case evPartial:
				f.r.Partial++
				if f.r.PartialExample == "" {
					f.r.PartialExample = e.err.Error()
				}
				continue
			case kind:
				if !on(e) {
					continue
				}
			default:
				continue
			}
			if concerns(e.id) {
				done[e.id] = true
			}
		case <-tick.C:
			if err := f.d.alive(); err != nil {
				f.r.Aborted = err.Error()
				return
			}
		case <-deadline.C:
			f.r.Aborted = fmt.Sprintf("timeout after %v: %d of %d sidecars done or failed", f.o.Timeout, len(done), want)
			return
		case <-ctx.Done():
			f.r.Aborted = ctx.Err().Error()
			return
		}
	}
}

// fullConfig waits for every sidecar's full config.
func (f *fleet) fullConfig(ctx context.Context) {
	last := f.started
	f.wait(ctx, evFull, f.o.Proxies, func(int) bool { return true }, func(e proxyEvent) bool {
		f.full[e.id] = true
		f.r.Full++
		f.r.FullEach = append(f.r.FullEach, e.at.Sub(f.proxies[e.id].start))
		if e.at.After(last) {
			last = e.at
		}
		return true
	})
	f.r.FullTotal = last.Sub(f.started)
}

// liveSidecars counts the sidecars that have full config and have not
// failed, and names those that failed so far (a phase waits for the
// others).
func (f *fleet) liveSidecars() (int, map[int]bool) {
	live := f.r.Full
	failed := map[int]bool{}
	for id := range f.failed {
		failed[id] = true
		if f.full[id] {
			live--
		}
	}
	return live, failed
}

// change makes change round r: it edits the target VirtualService and
// waits until every sidecar that has full config and is still connected
// got the new route. It returns how many did and the time from the edit
// to the last of them.
func (f *fleet) change(ctx context.Context, w *world, r int) (int, time.Duration, error) {
	live, failedBefore := f.liveSidecars()
	f.round.Store(int32(r))
	edit := time.Now()
	if err := w.change(ctx, r); err != nil {
		return 0, 0, err
	}
	last, n := edit, 0
	f.wait(ctx, evChanged, live, func(id int) bool { return f.full[id] && !failedBefore[id] }, func(e proxyEvent) bool {
		if e.round != int32(r) {
			return false // late news of an earlier round
		}
		n++
		f.r.ConvergeEach = append(f.r.ConvergeEach, e.at.Sub(edit))
		if e.at.After(last) {
			last = e.at
		}
		return true
	})
	return n, last.Sub(edit), nil
}

// checkBacklogs has every validating sidecar check what it received since
// the last call (proxy.checkBacklog), a few at a time, and records the
// failures; it returns the tool's CPU seconds it took.
func (f *fleet) checkBacklogs() float64 {
	before, _ := cpuSeconds(os.Getpid())
	errs := make([]error, len(f.proxies))
	slots := make(chan struct{}, runtime.GOMAXPROCS(0))
	var wg sync.WaitGroup
	for i, p := range f.proxies {
		if !p.validate {
			continue
		}
		wg.Add(1)
		slots <- struct{}{}
		go func() {
			defer func() { <-slots; wg.Done() }()
			errs[i] = p.checkBacklog()
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			f.fail(proxyEvent{id: i, kind: evFailed, at: time.Now(), err: err})
		}
	}
	after, _ := cpuSeconds(os.Getpid())
	return after - before
}

// drain records late failures (e.g. a stream that broke after the change).
func (f *fleet) drain() {
	for {
		select {
		case e := <-f.events:
			if e.kind == evFailed {
				f.fail(e)
			}
		default:
			return
		}
	}
}
