package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"
	"time"
)

func main() {
	o := DefaultOptions()
	flag.IntVar(&o.Proxies, "n", o.Proxies, "simulated sidecars")
	flag.IntVar(&o.Services, "services", o.Services, "services (ServiceEntry, DestinationRule and VirtualService each)")
	flag.IntVar(&o.Namespaces, "namespaces", o.Namespaces, "namespaces the services and sidecars are spread over")
	flag.IntVar(&o.DialConcurrency, "dial-concurrency", o.DialConcurrency, "connections opened at once")
	flag.IntVar(&o.MaxSyncing, "max-syncing", 0, "at most this many sidecars between first dial and full config (a ramp; 0: all at once)")
	flag.IntVar(&o.ValidateSidecars, "validate", o.ValidateSidecars, "sidecars that decode every resource and run ValidateAll on it (the others check the wire rules)")
	flag.DurationVar(&o.Timeout, "timeout", o.Timeout, "bound on each phase (a hang guard, not a target)")
	flag.StringVar(&o.Istiod, "istiod", "", "control planes to measure one after the other, comma-separated: self (build ./cmd/istiod, the default), peer (Istio's pilot-discovery, `make peerbin`), a path, or meshplane=PATH / istio=PATH")
	flag.BoolVar(&o.Kube, "kube", false, "serve the mesh from a real kube-apiserver + etcd (tests/kube) instead of files; needed for Istio's pilot-discovery")
	flag.IntVar(&o.Repeat, "repeat", o.Repeat, "times the VirtualService is changed; the report gives the median")
	flag.DurationVar(&o.Settle, "settle", o.Settle, "idle time after istiod is ready, and after the last change round, before its no-sidecar and steady-state memory are read")
	flag.BoolVar(&o.Keep, "keep", false, "keep the work directory (generated mesh, istiod log)")
	flag.StringVar(&o.IstiodCPUProfile, "istiod-cpuprofile", "", "record each control plane's CPU profile of the change rounds into this file (.<flavor> appended)")
	flag.StringVar(&o.IstiodHeapProfile, "istiod-heapprofile", "", "write istiod's heap profile at the end (sidecars still connected) to this file")
	window := flag.Int("window", int(o.Window), "each sidecar's fixed HTTP/2 flow-control window in bytes, per stream and per connection (at least 65536; 0: gRPC's default, which grows with its bandwidth estimate)")
	flag.DurationVar(&o.StormDuration, "storm", 0, "after the change rounds, a config storm of this length: the VirtualService edited -storm-rate times a second, then the time until every sidecar has the last edit")
	flag.IntVar(&o.StormRate, "storm-rate", 10, "edits a second during -storm")
	flag.IntVar(&o.ChurnPods, "churn", 0, "after the change rounds (with -kube), replace this many pods behind -churn-services Services as a rolling restart does, then the time until every sidecar has the final endpoints")
	flag.IntVar(&o.ChurnServices, "churn-services", 10, "Services the -churn pods are spread over")
	flag.DurationVar(&o.ChurnInterval, "churn-interval", 100*time.Millisecond, "time between two updates of one Service's endpoints during -churn")
	quiet := flag.Bool("q", false, "no progress lines")
	cpuProfile := flag.String("cpuprofile", "", "write the tool's CPU profile to this file")
	memProfile := flag.String("memprofile", "", "write the tool's heap profile at the end to this file")
	flag.Parse()
	o.Window = int32(min(*window, 1<<30))
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "loadtest:", err)
			os.Exit(2)
		}
		defer pprof.StopCPUProfile()
	}
	if !*quiet {
		o.Log = os.Stderr
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	rs, err := RunAll(ctx, o)
	stop()
	for i, r := range rs {
		if i > 0 {
			fmt.Println()
		}
		r.Print(os.Stdout)
	}
	if len(rs) > 1 {
		fmt.Println()
		PrintComparison(os.Stdout, rs)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "loadtest:", err)
		os.Exit(2)
	}
	if *memProfile != "" {
		if f, err := os.Create(*memProfile); err == nil {
			_ = pprof.WriteHeapProfile(f)
			f.Close()
		}
	}
	pprof.StopCPUProfile()
	for _, r := range rs {
		if !r.OK() {
			os.Exit(1)
		}
	}
}
