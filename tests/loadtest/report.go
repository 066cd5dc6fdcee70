package main

import (
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"
)

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

// seconds renders a histogram value in seconds as milliseconds.
func seconds(s float64) string { return ms(time.Duration(s * float64(time.Second))) }

func mib(b int64) string { return strconv.FormatFloat(float64(b)/(1<<20), 'f', 1, 64) + " MiB" }

// Print writes the summary table.
func (r *Report) Print(w io.Writer) {
	fmt.Fprintf(w, "%s load test: %d sidecars over delta ADS, %d services (ServiceEntry + WorkloadEntries, DestinationRule, VirtualService) in %d namespaces, from %s\n\n",
		r.Name, r.Proxies, r.Services, r.Namespaces, r.Source)
	fmt.Fprintf(w, "%-30s %11s %10s %10s %10s %10s\n", "phase", "sidecars", "p50", "p99", "max", "total")
	row := func(name string, n int, each []time.Duration, total time.Duration) {
		s := sortedCopy(each)
		fmt.Fprintf(w, "%-30s %11s %10s %10s %10s %10s\n", name, fmt.Sprintf("%d/%d", n, r.Proxies),
			ms(percentile(s, 0.5)), ms(percentile(s, 0.99)), ms(percentile(s, 1)), ms(total))
	}
	row("full config (CDS+EDS+LDS+RDS)", r.Full, r.FullEach, r.FullTotal)
	row("VirtualService change", r.Converged, r.ConvergeEach, r.ConvergeTotal)
	fmt.Fprintf(w, "\nper sidecar: dial to full config / edit to new route (all rounds); total: first dial to last sidecar / edit to last sidecar (median of %d rounds: %s)\n",
		len(r.Rounds), roundList(r.Rounds))
	fmt.Fprintf(w, "received, first phase: %d responses; CDS %d resources (%s), EDS %d (%s), LDS %d (%s), RDS %d (%s)\n",
		r.Responses, r.Resources[0], mib(r.Bytes[0]), r.Resources[1], mib(r.Bytes[1]), r.Resources[2], mib(r.Bytes[2]), r.Resources[3], mib(r.Bytes[3]))
	fmt.Fprintf(w, "received, change phase: %d responses, %s\n", r.ChangeResponses, mib(r.ChangeBytes))
	fmt.Fprintf(w, "istiod: ready after %s; CPU seconds: startup %.2f, connect to full config %.2f, change %.2f\n",
		ms(r.ReadyAfter), r.IstiodStartupCPU, r.IstiodConnectCPU, r.IstiodChangeCPU)
	fmt.Fprintf(w, "istiod memory: no sidecar RSS %s, live heap %s; at end RSS %s (peak %s), live heap %s; per sidecar RSS %s, heap %s\n",
		mib(r.IstiodBaselineRSS), mib(r.IstiodBaselineHeap), mib(r.IstiodRSS), mib(r.IstiodPeakRSS), mib(r.IstiodHeap),
		kib(r.perProxy(r.IstiodRSS, r.IstiodBaselineRSS)), kib(r.perProxy(r.IstiodHeap, r.IstiodBaselineHeap)))
	if m := r.IstiodRuntime; m != nil {
		fmt.Fprintf(w, "istiod Go runtime at end: Sys %s; heap sys %s, idle %s of which released %s; stacks %s; GC goal %s\n",
			mib(m["Sys"]), mib(m["HeapSys"]), mib(m["HeapIdle"]), mib(m["HeapReleased"]), mib(m["StackInuse"]), mib(m["NextGC"]))
	}
	printStages(w, "the change rounds", r.PushStages)
	if c := r.Churn; c != nil {
		fmt.Fprintf(w, "pod churn: %d pods behind %d Services, %d updates in %s; %d/%d sidecars had the final endpoints %s after the last (p50 %s); empty assignments %d; non-EDS resources %d; %d responses; istiod CPU seconds %.2f\n",
			c.Pods, c.Services, c.Updates, ms(c.Duration), c.Converged, r.Proxies, ms(c.AfterEnd), ms(c.ConvergeP50), c.EmptyAssignments, c.NonEDS, c.Responses, c.IstiodCPU)
	}
	if c := r.Churn; c != nil {
		printStages(w, "the pod churn", c.PushStages)
	}
	if s := r.Storm; s != nil {
		fmt.Fprintf(w, "config storm: %d edits in %s; %d/%d sidecars had the last %s after it (p50 %s); istiod CPU seconds %.2f, RSS peak %s, at end %s; received %d responses, %s; tool CPU %.2f\n",
			s.Edits, ms(s.Duration), s.Converged, r.Proxies, ms(s.AfterEnd), ms(s.ConvergeP50), s.IstiodCPU, mib(s.IstiodPeakRSS), mib(s.IstiodRSSAtEnd),
			s.Responses, mib(s.Bytes), s.ToolCPU)
	}
	if s := r.Storm; s != nil {
		printStages(w, "the config storm", s.PushStages)
	}
	fmt.Fprintf(w, "load tool: CPU seconds: connect %.2f, change %.2f, validation after the phases %.2f; RSS at end %s (peak %s)\n",
		r.ToolConnectCPU, r.ToolChangeCPU, r.ToolValidateCPU, mib(r.ToolRSS), mib(r.ToolPeakRSS))
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

func kib(b int64) string { return strconv.FormatFloat(float64(b)/(1<<10), 'f', 1, 64) + " KiB" }

// perProxy is the memory each connected sidecar adds over the baseline
// with none.
func (r *Report) perProxy(end, baseline int64) int64 {
	if r.Proxies == 0 || end == 0 || baseline == 0 {
		return 0
	}
	return (end - baseline) / int64(r.Proxies)
}

func roundList(d []time.Duration) string {
	parts := make([]string, len(d))
	for i, x := range d {
		parts[i] = ms(x)
	}
	return strings.Join(parts, " ")
}

// PrintComparison writes the figures of several control planes, measured
// one after the other on the same mesh, side by side.
func PrintComparison(w io.Writer, rs []*Report) {
	if len(rs) == 0 {
		return
	}
	r0 := rs[0]
	fmt.Fprintf(w, "side by side: %d sidecars, %d services in %d namespaces, from %s, VirtualService change repeated %d times\n\n",
		r0.Proxies, r0.Services, r0.Namespaces, r0.Source, len(r0.Rounds))
	fmt.Fprintf(w, "%-36s", "")
	for _, r := range rs {
		fmt.Fprintf(w, " %24s", r.Name)
	}
	fmt.Fprintln(w)
	row := func(name string, f func(r *Report) string) {
		fmt.Fprintf(w, "%-36s", name)
		for _, r := range rs {
			fmt.Fprintf(w, " %24s", f(r))
		}
		fmt.Fprintln(w)
	}
	row("sidecars full / converged", func(r *Report) string { return fmt.Sprintf("%d / %d of %d", r.Full, r.Converged, r.Proxies) })
	row("ready after", func(r *Report) string { return ms(r.ReadyAfter) })
	row("full config, all sidecars", func(r *Report) string { return ms(r.FullTotal) })
	row("full config p50 / p99", func(r *Report) string {
		s := sortedCopy(r.FullEach)
		return ms(percentile(s, 0.5)) + " / " + ms(percentile(s, 0.99))
	})
	row("change converged, median of rounds", func(r *Report) string { return ms(r.ConvergeTotal) })
	row("change, per sidecar p50 / p99", func(r *Report) string {
		s := sortedCopy(r.ConvergeEach)
		return ms(percentile(s, 0.5)) + " / " + ms(percentile(s, 0.99))
	})
	row("RSS, no sidecar", func(r *Report) string { return mib(r.IstiodBaselineRSS) })
	row("RSS, steady state (end)", func(r *Report) string { return mib(r.IstiodRSS) })
	row("peak RSS", func(r *Report) string { return mib(r.IstiodPeakRSS) })
	row("live heap, no sidecar", func(r *Report) string { return mib(r.IstiodBaselineHeap) })
	row("live heap, end", func(r *Report) string { return mib(r.IstiodHeap) })
	row("RSS per sidecar over baseline", func(r *Report) string { return kib(r.perProxy(r.IstiodRSS, r.IstiodBaselineRSS)) })
	row("heap per sidecar over baseline", func(r *Report) string { return kib(r.perProxy(r.IstiodHeap, r.IstiodBaselineHeap)) })
	row("CPU s: startup", func(r *Report) string { return fmt.Sprintf("%.2f", r.IstiodStartupCPU) })
	row("CPU s: connect to full config", func(r *Report) string { return fmt.Sprintf("%.2f", r.IstiodConnectCPU) })
	row("CPU s: all change rounds", func(r *Report) string { return fmt.Sprintf("%.2f", r.IstiodChangeCPU) })
	row("received, first phase", func(r *Report) string {
		var b int64
		for _, x := range r.Bytes {
			b += x
		}
		return fmt.Sprintf("%d resp, %s", r.Responses, mib(b))
	})
	row("received, change rounds", func(r *Report) string { return fmt.Sprintf("%d resp, %s", r.ChangeResponses, mib(r.ChangeBytes)) })
	if r0.Churn != nil {
		churn := func(name string, f func(c *ChurnReport) string) {
			row(name, phaseCell(func(r *Report) *ChurnReport { return r.Churn }, f))
		}
		churn("churn: updates", func(c *ChurnReport) string { return fmt.Sprintf("%d in %s", c.Updates, ms(c.Duration)) })
		churn("churn: final endpoints, all", func(c *ChurnReport) string { return ms(c.AfterEnd) })
		churn("churn: empty assignments", func(c *ChurnReport) string { return strconv.FormatInt(c.EmptyAssignments, 10) })
		churn("churn: non-EDS resources", func(c *ChurnReport) string { return strconv.FormatInt(c.NonEDS, 10) })
		churn("churn: istiod CPU s", func(c *ChurnReport) string { return fmt.Sprintf("%.2f", c.IstiodCPU) })
	}
	if r0.Storm != nil {
		storm := func(name string, f func(s *StormReport) string) {
			row(name, phaseCell(func(r *Report) *StormReport { return r.Storm }, f))
		}
		storm("storm: edits", func(s *StormReport) string { return fmt.Sprintf("%d in %s", s.Edits, ms(s.Duration)) })
		storm("storm: last edit, all sidecars", func(s *StormReport) string { return ms(s.AfterEnd) })
		storm("storm: istiod CPU s", func(s *StormReport) string { return fmt.Sprintf("%.2f", s.IstiodCPU) })
		storm("storm: istiod RSS peak", func(s *StormReport) string { return mib(s.IstiodPeakRSS) })
		storm("storm: received", func(s *StormReport) string { return fmt.Sprintf("%d resp, %s", s.Responses, mib(s.Bytes)) })
	}
	row("load tool RSS end / peak", func(r *Report) string { return mib(r.ToolRSS) + " / " + mib(r.ToolPeakRSS) })
	for _, r := range rs {
		if !r.OK() {
			fmt.Fprintf(w, "\n%s: NOT OK (see its report above)\n", r.Name)
		}
	}
}

// phaseCell renders a figure of an optional phase (churn, storm) of a
// report: "-" where the report has no such phase.
func phaseCell[T any](phase func(*Report) *T, f func(*T) string) func(*Report) string {
	return func(r *Report) string {
		if p := phase(r); p != nil {
			return f(p)
		}
		return "-"
	}
}

// printStages writes istiod's push-stage histograms over a phase (nothing
// when they were not read).
func printStages(w io.Writer, phase string, st map[string]histogram) {
	if st == nil {
		return
	}
	fmt.Fprintf(w, "istiod's histograms over %s, mean (observations): debounce %s (%.0f), push context %s (%.0f), queue %s (%.0f), xDS push %s (%.0f), convergence %s (%.0f)\n",
		phase,
		seconds(st["pilot_debounce_time"].mean()), st["pilot_debounce_time"].count,
		seconds(st["pilot_pushcontext_init_seconds"].mean()), st["pilot_pushcontext_init_seconds"].count,
		seconds(st["pilot_proxy_queue_time"].mean()), st["pilot_proxy_queue_time"].count,
		seconds(st["pilot_xds_push_time"].mean()), st["pilot_xds_push_time"].count,
		seconds(st["pilot_proxy_convergence_time"].mean()), st["pilot_proxy_convergence_time"].count)
}
