package main

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/meshplane/istiod/tests/testproc"
)

// daemon is a running istiod process on loopback ports.
type daemon struct {
	cmd     *exec.Cmd
	logPath string
	http    string
	grpc    string
	// monitoring is the Prometheus port (/metrics)
	monitoring string
	exited     chan struct{}
	exitErr    error
	stopped    bool
}

// startIstiod runs the control plane on src with free loopback ports, in
// working directory dir; its output goes to dir/istiod.log. The process is
// killed if the tool dies.
func startIstiod(t target, src source, meshFile, dir string) (*daemon, error) {
	addrs, err := testproc.FreeAddrs(4)
	if err != nil {
		return nil, err
	}
	la := listenAddrs{http: addrs[0], monitoring: addrs[1], grpc: addrs[2], secureGRPC: addrs[3]}
	args, env, err := commandLine(t.flavor, src, meshFile, dir, la)
	if err != nil {
		return nil, err
	}
	logPath := filepath.Join(dir, "istiod.log")
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	d := &daemon{http: la.http, grpc: la.grpc, monitoring: la.monitoring, logPath: logPath, exited: make(chan struct{})}
	d.cmd = exec.Command(t.bin, args...)
	d.cmd.Dir = dir
	d.cmd.Stdout, d.cmd.Stderr = logf, logf
	d.cmd.Env = append(os.Environ(), env...)
	d.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := d.cmd.Start(); err != nil {
		logf.Close()
		return nil, err
	}
	go func() {
		d.exitErr = d.cmd.Wait()
		logf.Close()
		close(d.exited)
	}()
	return d, nil
}

func (d *daemon) pid() int { return d.cmd.Process.Pid }

// heapProfile writes istiod's heap profile (after a GC) to path.
func (d *daemon) heapProfile(path string) error { return d.profile("/debug/pprof/heap?gc=1", path) }

// cpuProfile records istiod's CPU profile for the given time into path.
func (d *daemon) cpuProfile(seconds int, path string) error {
	return d.profile("/debug/pprof/profile?seconds="+strconv.Itoa(seconds), path)
}

// profile writes what a pprof endpoint of istiod answers to path.
func (d *daemon) profile(endpoint, path string) error {
	resp, err := http.Get("http://" + d.http + endpoint)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s", resp.Status)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// histograms reads, from istiod's /metrics, the sum and count of each
// named histogram over all its label sets.
func (d *daemon) histograms(names []string) (map[string]histogram, error) {
	client := &http.Client{Timeout: 10 * time.Second}
	resp, err := client.Get("http://" + d.monitoring + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("/metrics: %s", resp.Status)
	}
	return parseHistograms(resp.Body, names)
}

// histogram is a Prometheus histogram's sum and count.
type histogram struct{ sum, count float64 }

// sub is what was observed between before and h.
func (h histogram) sub(before histogram) histogram {
	return histogram{sum: h.sum - before.sum, count: h.count - before.count}
}

// mean is the mean observation, 0 without any.
func (h histogram) mean() float64 {
	if h.count == 0 {
		return 0
	}
	return h.sum / h.count
}

// parseHistograms reads the _sum and _count lines of the named histograms
// from the Prometheus text format, adding up their label sets.
func parseHistograms(r io.Reader, names []string) (map[string]histogram, error) {
	out := map[string]histogram{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			continue
		}
		series, value, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		metric, _, _ := strings.Cut(series, "{")
		for _, n := range names {
			h := out[n]
			switch metric {
			case n + "_sum":
				v, err := strconv.ParseFloat(strings.Fields(value)[0], 64)
				if err != nil {
					return nil, fmt.Errorf("%s: %v", line, err)
				}
				h.sum += v
			case n + "_count":
				v, err := strconv.ParseFloat(strings.Fields(value)[0], 64)
				if err != nil {
					return nil, fmt.Errorf("%s: %v", line, err)
				}
				h.count += v
			default:
				continue
			}
			out[n] = h
		}
	}
	return out, sc.Err()
}

// liveHeap forces a GC in istiod and reads its live heap (HeapAlloc) from
// the text form of /debug/pprof/heap, which both control planes serve on
// their HTTP port to loopback callers.
func (d *daemon) liveHeap() (int64, error) {
	m, err := d.memStats()
	if err != nil {
		return 0, err
	}
	v, ok := m["HeapAlloc"]
	if !ok {
		return 0, fmt.Errorf("no HeapAlloc line in the heap profile")
	}
	return v, nil
}

// memStats forces a GC in istiod and reads the runtime.MemStats lines of
// its text heap profile ("# Name = N").
func (d *daemon) memStats() (map[string]int64, error) {
	client := &http.Client{Timeout: time.Minute}
	resp, err := client.Get("http://" + d.http + "/debug/pprof/heap?gc=1&debug=1")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s", resp.Status)
	}
	return parseMemStats(resp.Body)
}

// parseMemStats reads the "# Name = N" lines of a text heap profile.
func parseMemStats(r io.Reader) (map[string]int64, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	out := map[string]int64{}
	for sc.Scan() {
		name, v, ok := strings.Cut(strings.TrimPrefix(sc.Text(), "# "), " = ")
		if !ok || !strings.HasPrefix(sc.Text(), "# ") {
			continue
		}
		if n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil {
			out[name] = n
		}
	}
	return out, sc.Err()
}

// waitReady polls /ready; the deadline only guards against a hang.
func (d *daemon) waitReady(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	client := &http.Client{Timeout: time.Second}
	for {
		select {
		case <-d.exited:
			return fmt.Errorf("istiod exited: %v\n%s", d.exitErr, d.logTail(4096))
		default:
		}
		resp, err := client.Get("http://" + d.http + "/ready")
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("istiod not ready within %v\n%s", timeout, d.logTail(4096))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// alive reports an early exit as an error.
func (d *daemon) alive() error {
	select {
	case <-d.exited:
		return fmt.Errorf("istiod exited: %v\n%s", d.exitErr, d.logTail(4096))
	default:
		return nil
	}
}

// stop sends SIGTERM and waits for the graceful drain, then kills.
func (d *daemon) stop() {
	if d.stopped {
		return
	}
	d.stopped = true
	testproc.Stop(d.cmd.Process, d.exited, 20*time.Second)
}

// logTail returns the last n bytes of the daemon's log.
func (d *daemon) logTail(n int64) string {
	f, err := os.Open(d.logPath)
	if err != nil {
		return ""
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Size() > n {
		_, _ = f.Seek(st.Size()-n, io.SeekStart)
	}
	b, _ := io.ReadAll(f)
	return string(b)
}

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat times; it is 100 on
// every Linux architecture Go supports.
const clockTicks = 100

// cpuSeconds reads utime+stime of a process.
func cpuSeconds(pid int) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	s := string(b)
	// the command name may hold spaces: fields start after the last ')'
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("unexpected /proc/%d/stat", pid)
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("unexpected /proc/%d/stat", pid)
	}
	// f[0] is field 3 (state); utime and stime are fields 14 and 15
	ut, err1 := strconv.ParseUint(f[11], 10, 64)
	st, err2 := strconv.ParseUint(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("unexpected /proc/%d/stat", pid)
	}
	return float64(ut+st) / clockTicks, nil
}
