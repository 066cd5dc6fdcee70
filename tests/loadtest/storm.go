package main

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/meshplane/istiod/tests/procstat"
)

// The config storm: the target VirtualService edited StormRate times a
// second for StormDuration with every sidecar connected, then the time
// from the last edit until every sidecar has that edit's routes. Every edit
// but the last gives the target weights of some earlier round (1 to
// maxRounds-1, in turn); the last gives those of round maxRounds, which no
// other edit had, so a sidecar reports only the final routes. istiod's CPU
// seconds over the storm and its RSS, sampled every 100 ms, are recorded
// (its peak RSS since start would include the connect phase).

// StormReport is what the storm measured.
type StormReport struct {
	Duration time.Duration // of the edits
	Edits    int           // made (an edit slower than the interval delays the next)
	// Converged sidecars got the last edit's routes, AfterEnd after it
	// (the last of them)
	Converged   int
	AfterEnd    time.Duration
	ConvergeP50 time.Duration
	// istiod over the storm and until convergence
	IstiodCPU      float64
	IstiodPeakRSS  int64
	IstiodRSSAtEnd int64
	Responses      int64 // received by the sidecars over the storm
	Bytes          int64
	ToolCPU        float64
	// PushStages are istiod's push-stage histograms over the storm
	PushStages map[string]histogram
}

// stormRound is the round whose weights the last edit of a storm writes.
const stormRound = maxRounds

// storm runs the storm (Options.StormDuration > 0) after the change rounds.
func (f *fleet) storm(ctx context.Context, w *world, pid int, cpu *cpuMeter) (*StormReport, error) {
	o := f.o
	rate := o.StormRate
	if rate < 1 {
		rate = 10
	}
	live, failedBefore := f.liveSidecars()
	cpu.lap()
	sr := &StormReport{}
	responses, bytes := f.count.responses.Load(), f.receivedBytes()

	// istiod's RSS while it runs
	sampling := make(chan struct{})
	var sampler sync.WaitGroup
	sampler.Add(1)
	go func() {
		defer sampler.Done()
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			if rss, _ := procstat.Memory(strconv.Itoa(pid)); rss > sr.IstiodPeakRSS {
				sr.IstiodPeakRSS = rss
			}
			select {
			case <-sampling:
				return
			case <-t.C:
			}
		}
	}()
	defer func() {
		close(sampling)
		sampler.Wait()
	}()

	stages, _ := f.d.histograms(pushStageMetrics)
	f.round.Store(int32(stormRound))
	interval := time.Second / time.Duration(rate)
	start := time.Now()
	next := start
	var last time.Time
	for k := 0; ; k++ {
		final := next.Add(interval).Sub(start) >= o.StormDuration
		r := 1 + k%(stormRound-1)
		if final {
			r = stormRound
		}
		if err := w.change(ctx, r); err != nil {
			return nil, err
		}
		sr.Edits++
		last = time.Now()
		if final {
			break
		}
		next = next.Add(interval)
		if d := time.Until(next); d > 0 {
			select {
			case <-time.After(d):
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		} else {
			next = time.Now() // an edit took longer than the interval
		}
	}
	sr.Duration = last.Sub(start)
	var each []time.Duration
	f.wait(ctx, evChanged, live, func(id int) bool { return f.full[id] && !failedBefore[id] }, func(e proxyEvent) bool {
		if e.round != int32(stormRound) {
			return false
		}
		sr.Converged++
		each = append(each, e.at.Sub(last))
		if d := e.at.Sub(last); d > sr.AfterEnd {
			sr.AfterEnd = d
		}
		return true
	})
	sr.ConvergeP50 = percentile(sortedCopy(each), 0.5)
	sr.IstiodCPU, sr.ToolCPU = cpu.lap()
	sr.IstiodRSSAtEnd, _ = procstat.Memory(strconv.Itoa(pid))
	sr.Responses = f.count.responses.Load() - responses
	sr.Bytes = f.receivedBytes() - bytes
	sr.PushStages = f.d.stagesSince(stages)
	return sr, nil
}

// receivedBytes sums what the sidecars received so far.
func (f *fleet) receivedBytes() int64 {
	var b int64
	for i := range f.count.bytes {
		b += f.count.bytes[i].Load()
	}
	return b
}
