package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"
)

func main() {
	o := DefaultOptions()
	flag.IntVar(&o.Proxies, "n", o.Proxies, "simulated sidecars")
	flag.IntVar(&o.Services, "services", o.Services, "services (ServiceEntry, DestinationRule and VirtualService each)")
	flag.IntVar(&o.Namespaces, "namespaces", o.Namespaces, "namespaces the services and sidecars are spread over")
	flag.IntVar(&o.DialConcurrency, "dial-concurrency", o.DialConcurrency, "connections opened at once")
	flag.IntVar(&o.ValidateSidecars, "validate", o.ValidateSidecars, "sidecars that decode every resource and run ValidateAll on it (the others check the wire rules)")
	flag.DurationVar(&o.Timeout, "timeout", o.Timeout, "bound on each phase (a hang guard, not a target)")
	flag.StringVar(&o.Binary, "istiod", "", "istiod binary to run (default: build ./cmd/istiod)")
	flag.BoolVar(&o.Keep, "keep", false, "keep the work directory (generated mesh, istiod log)")
	flag.StringVar(&o.IstiodHeapProfile, "istiod-heapprofile", "", "write istiod's heap profile at the end (sidecars still connected) to this file")
	quiet := flag.Bool("q", false, "no progress lines")
	cpuProfile := flag.String("cpuprofile", "", "write the tool's CPU profile to this file")
	memProfile := flag.String("memprofile", "", "write the tool's heap profile at the end to this file")
	flag.Parse()
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
	r, err := Run(ctx, o)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "loadtest:", err)
		os.Exit(2)
	}
	r.Print(os.Stdout)
	if *memProfile != "" {
		if f, err := os.Create(*memProfile); err == nil {
			_ = pprof.WriteHeapProfile(f)
			f.Close()
		}
	}
	pprof.StopCPUProfile()
	if !r.OK() {
		os.Exit(1)
	}
}
