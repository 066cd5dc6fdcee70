package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"sync"
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
	// ValidateSidecars is how many sidecars (spread evenly) decode every
	// resource and run ValidateAll on it; the wire rules are checked by all.
	ValidateSidecars int
	// Timeout bounds each phase; it guards against a hang and is not a
	// performance target.
	Timeout time.Duration
	// Binary is a built istiod; empty: build cmd/istiod into the work dir.
	Binary string
	// Keep leaves the work directory (mesh, istiod log) in place.
	Keep bool
	// Log receives progress lines; nil discards them.
	Log io.Writer
	// IstiodHeapProfile, when set, is where istiod's heap profile is
	// written at the end, with every sidecar still connected.
	IstiodHeapProfile string
}

// DefaultOptions is the scenario of the issue: 1,000 sidecars, 100 services.
func DefaultOptions() Options {
	return Options{Proxies: 1000, Services: 100, Namespaces: 10, DialConcurrency: 64, ValidateSidecars: 50, Timeout: 2 * time.Minute}
}

// Report holds the figures of one run.
type Report struct {
	Proxies, Services, Namespaces int

	Full      int             // sidecars that got full config
	FullEach  []time.Duration // per sidecar: dial start to full config
	FullTotal time.Duration   // first dial to the last sidecar's full config

	Converged     int             // sidecars that got the changed route
	ConvergeEach  []time.Duration // per sidecar: file edit to the new route
	ConvergeTotal time.Duration   // file edit to the last sidecar's new route

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
	ChangeResponses, ChangeBytes int64 // received in the change phase

	IstiodStartupCPU, IstiodConnectCPU, IstiodChangeCPU float64 // seconds
	IstiodRSS, IstiodPeakRSS                            int64
	ToolRSS, ToolPeakRSS                                int64
	ToolConnectCPU, ToolChangeCPU                       float64
	ReadyAfter                                          time.Duration
}

// OK reports a run in which every sidecar got full config and the change,
// with no wire-rule error.
func (r *Report) OK() bool {
	return r.Aborted == "" && len(r.Failures) == 0 && r.WireErrors == 0 &&
		r.Full == r.Proxies && r.Converged == r.Proxies
}

// Run generates the mesh, starts istiod, connects the sidecars, waits for full
// config, changes one VirtualService and waits for all sidecars to get it.
// An error means the run could not be set up; sidecar failures are in the
// report.
func Run(ctx context.Context, o Options) (*Report, error) {
	if o.Proxies < 1 || o.Services < 1 || o.Namespaces < 1 || o.DialConcurrency < 1 {
		return nil, errors.New("proxies, services, namespaces and dial concurrency must be positive")
	}
	logf := func(format string, args ...any) {
		if o.Log != nil {
			fmt.Fprintf(o.Log, "loadtest: "+format+"\n", args...)
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
	bin := o.Binary
	if bin == "" {
		logf("building istiod")
		if bin, err = buildIstiod(work); err != nil {
			return nil, err
		}
	}
	m := &mesh{dir: filepath.Join(work, "config"), services: o.Services, namespaces: o.Namespaces, proxies: o.Proxies}
	if err := m.write(); err != nil {
		return nil, err
	}
	meshFile := filepath.Join(work, "mesh.yaml")
	if err := os.WriteFile(meshFile, []byte(meshConfig), 0o644); err != nil {
		return nil, err
	}
	t0 := time.Now()
	d, err := startIstiod(bin, m.dir, meshFile, filepath.Join(work, "istiod.log"))
	if err != nil {
		return nil, err
	}
	defer d.stop()
	if err := d.waitReady(o.Timeout); err != nil {
		return nil, err
	}
	r := &Report{Proxies: o.Proxies, Services: o.Services, Namespaces: o.Namespaces, Failures: map[string]int{}, ReadyAfter: time.Since(t0)}
	pid := d.pid()
	r.IstiodStartupCPU, _ = cpuSeconds(pid)
	logf("istiod ready after %v (pid %d, xDS on %s); connecting %d sidecars", r.ReadyAfter.Round(time.Millisecond), pid, d.grpc, o.Proxies)

	f := &fleet{o: o, d: d, r: r, events: make(chan proxyEvent, 3*o.Proxies), count: &counters{}, failed: map[int]bool{}, full: map[int]bool{}}
	cpu := newCPUMeter(pid)
	f.start(ctx, m)
	defer f.stop()
	f.fullConfig(ctx)
	r.IstiodConnectCPU, r.ToolConnectCPU = cpu.lap()
	r.Responses = f.count.responses.Load()
	for i := range r.Resources {
		r.Resources[i], r.Bytes[i] = f.count.resources[i].Load(), f.count.bytes[i].Load()
	}
	logf("%d sidecars have full config after %v; changing VirtualService %s", r.Full, r.FullTotal.Round(time.Millisecond), m.vsPath(0))

	if r.Full > 0 && r.Aborted == "" {
		if err := f.change(ctx, m); err != nil {
			return nil, err
		}
		logf("%d sidecars have the new routes after %v", r.Converged, r.ConvergeTotal.Round(time.Millisecond))
	}
	r.IstiodChangeCPU, r.ToolChangeCPU = cpu.lap()
	r.ChangeResponses = f.count.responses.Load() - r.Responses
	for i := range f.count.bytes {
		r.ChangeBytes += f.count.bytes[i].Load() - r.Bytes[i]
	}
	r.IstiodRSS, r.IstiodPeakRSS = procstat.Memory(strconv.Itoa(pid))
	if o.IstiodHeapProfile != "" {
		if err := d.heapProfile(o.IstiodHeapProfile); err != nil {
			logf("istiod heap profile: %v", err)
		}
	}
	runtime.GC()
	r.ToolRSS, r.ToolPeakRSS = procstat.Memory("self")
	f.drain()
	return r, nil
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
	failed  map[int]bool // sidecars that failed
	full    map[int]bool // sidecars that got full config
	started time.Time
	cancel  context.CancelFunc
	wg      sync.WaitGroup
}

// start connects every sidecar, at most DialConcurrency at a time; a spread
// of ValidateSidecars of them validate every resource.
func (f *fleet) start(ctx context.Context, m *mesh) {
	ctx, f.cancel = context.WithCancel(ctx)
	slots := make(chan struct{}, f.o.DialConcurrency)
	decoders := make(chan struct{}, runtime.GOMAXPROCS(0))
	step := f.o.Proxies + 1 // validate none
	if f.o.ValidateSidecars > 0 {
		step = max(1, f.o.Proxies/f.o.ValidateSidecars)
	}
	f.proxies = make([]*proxy, f.o.Proxies)
	f.started = time.Now()
	for i := range f.proxies {
		p := &proxy{id: i, nodeID: m.nodeID(i), meta: m.metadata(i), validate: i%step == 0 && i/step < f.o.ValidateSidecars,
			targetVHost: m.targetVirtualHost(), targetCluster: m.targetCluster(), events: f.events, count: f.count, work: decoders}
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
// reported kind or failed, or the phase times out.
func (f *fleet) wait(ctx context.Context, kind eventKind, want int, concerns func(id int) bool, on func(proxyEvent)) {
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
				on(e)
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
	f.wait(ctx, evFull, f.o.Proxies, func(int) bool { return true }, func(e proxyEvent) {
		f.full[e.id] = true
		f.r.Full++
		f.r.FullEach = append(f.r.FullEach, e.at.Sub(f.proxies[e.id].start))
		if e.at.After(last) {
			last = e.at
		}
	})
	f.r.FullTotal = last.Sub(f.started)
}

// change edits the target VirtualService and waits until every sidecar
// that has full config and is still connected got the new route.
func (f *fleet) change(ctx context.Context, m *mesh) error {
	live := f.r.Full
	failedBefore := map[int]bool{}
	for id := range f.failed {
		failedBefore[id] = true
		if f.full[id] {
			live--
		}
	}
	edit := time.Now()
	if err := m.change(); err != nil {
		return err
	}
	last := edit
	f.wait(ctx, evChanged, live, func(id int) bool { return f.full[id] && !failedBefore[id] }, func(e proxyEvent) {
		f.r.Converged++
		f.r.ConvergeEach = append(f.r.ConvergeEach, e.at.Sub(edit))
		if e.at.After(last) {
			last = e.at
		}
	})
	f.r.ConvergeTotal = last.Sub(edit)
	return nil
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

// percentile by nearest rank of sorted durations.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(p*float64(len(sorted))+0.999999) - 1
	if i < 0 {
		i = 0
	}
	if i >= len(sorted) {
		i = len(sorted) - 1
	}
	return sorted[i]
}

func sortedCopy(d []time.Duration) []time.Duration {
	out := append([]time.Duration(nil), d...)
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

func ms(d time.Duration) string { return strconv.FormatFloat(float64(d)/1e6, 'f', 1, 64) + "ms" }

func mib(b int64) string { return strconv.FormatFloat(float64(b)/(1<<20), 'f', 1, 64) + " MiB" }

// Print writes the summary table.
func (r *Report) Print(w io.Writer) {
	fmt.Fprintf(w, "istiod load test: %d sidecars over delta ADS, %d services (ServiceEntry + WorkloadEntries, DestinationRule, VirtualService) in %d namespaces\n\n",
		r.Proxies, r.Services, r.Namespaces)
	fmt.Fprintf(w, "%-30s %11s %10s %10s %10s %10s\n", "phase", "sidecars", "p50", "p99", "max", "total")
	row := func(name string, n int, each []time.Duration, total time.Duration) {
		s := sortedCopy(each)
		fmt.Fprintf(w, "%-30s %11s %10s %10s %10s %10s\n", name, fmt.Sprintf("%d/%d", n, r.Proxies),
			ms(percentile(s, 0.5)), ms(percentile(s, 0.99)), ms(percentile(s, 1)), ms(total))
	}
	row("full config (CDS+EDS+LDS+RDS)", r.Full, r.FullEach, r.FullTotal)
	row("VirtualService change", r.Converged, r.ConvergeEach, r.ConvergeTotal)
	fmt.Fprintf(w, "\nper sidecar: dial to full config / file edit to new route; total: first dial to last sidecar / edit to last sidecar\n")
	fmt.Fprintf(w, "received, first phase: %d responses; CDS %d resources (%s), EDS %d (%s), LDS %d (%s), RDS %d (%s)\n",
		r.Responses, r.Resources[0], mib(r.Bytes[0]), r.Resources[1], mib(r.Bytes[1]), r.Resources[2], mib(r.Bytes[2]), r.Resources[3], mib(r.Bytes[3]))
	fmt.Fprintf(w, "received, change phase: %d responses, %s\n", r.ChangeResponses, mib(r.ChangeBytes))
	fmt.Fprintf(w, "istiod: ready after %s; CPU seconds: startup %.2f, connect to full config %.2f, change %.2f; RSS at end %s (peak %s)\n",
		ms(r.ReadyAfter), r.IstiodStartupCPU, r.IstiodConnectCPU, r.IstiodChangeCPU, mib(r.IstiodRSS), mib(r.IstiodPeakRSS))
	fmt.Fprintf(w, "load tool: CPU seconds: connect %.2f, change %.2f; RSS at end %s (peak %s)\n",
		r.ToolConnectCPU, r.ToolChangeCPU, mib(r.ToolRSS), mib(r.ToolPeakRSS))
	if r.Partial > 0 {
		fmt.Fprintf(w, "\nWARNING: %d sidecars were first served an incomplete mesh, e.g. %s\n", r.Partial, r.PartialExample)
	}
	if r.Aborted != "" {
		fmt.Fprintf(w, "\nABORTED: %s\n", r.Aborted)
	}
	if len(r.Failures) > 0 {
		fmt.Fprintf(w, "\nFAILED sidecars (%d wire-rule errors):\n", r.WireErrors)
		msgs := make([]string, 0, len(r.Failures))
		for m := range r.Failures {
			msgs = append(msgs, m)
		}
		sort.Strings(msgs)
		for i, m := range msgs {
			if i == 10 {
				fmt.Fprintf(w, "  ... %d more distinct errors\n", len(msgs)-10)
				break
			}
			fmt.Fprintf(w, "  %4d × %s\n", r.Failures[m], m)
		}
	}
}
