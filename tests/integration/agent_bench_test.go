package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	hcm "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/proto"

	"github.com/meshplane/istiod/pilot/pkg/xds"
	"github.com/meshplane/istiod/pilot/pkg/xds/adsc"
	"github.com/meshplane/istiod/tests/istiobin"
	"github.com/meshplane/istiod/tests/kube"
	"github.com/meshplane/istiod/tests/procstat"
	"github.com/meshplane/istiod/tests/testproc"
)

// istiodProc is the istiod binary, run so that its CPU time is its own.
type istiodProc struct {
	cmd          *exec.Cmd
	http, secure string
	log          *syncBuffer
	exited       chan struct{}
}

// startIstiodProcess builds and starts the istiod binary against env with
// namespace ns, every listener on loopback, and waits for /ready.
func startIstiodProcess(b *testing.B, env *kube.Env, ns string) *istiodProc {
	b.Helper()
	bin, err := testproc.BuildIstiod(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	p := &istiodProc{http: freeAddr(b), secure: freeAddr(b), log: &syncBuffer{}, exited: make(chan struct{})}
	p.cmd = exec.Command(bin, "discovery", "--kubeconfig", env.Kubeconfig, "-n", ns,
		"--httpAddr", p.http, "--monitoringAddr", freeAddr(b), "--grpcAddr", freeAddr(b),
		"--secureGRPCAddr", p.secure, "--httpsAddr", freeAddr(b),
		"--meshConfig", "/nonexistent", "--networksConfig", "/nonexistent",
		"--log_output_level", "default:warn,kube:warn,mesh:warn,bootstrap:info")
	p.cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + b.TempDir(), "POD_NAME=istiod-bench"}
	p.cmd.Stdout, p.cmd.Stderr = p.log, p.log
	if err := p.cmd.Start(); err != nil {
		b.Fatal(err)
	}
	go func() {
		_ = p.cmd.Wait()
		close(p.exited)
	}()
	b.Cleanup(func() { testproc.Stop(p.cmd.Process, p.exited, 15*time.Second) })
	testproc.Eventually(b, 3*time.Minute, "istiod /ready", func() (bool, string) {
		select {
		case <-p.exited:
			b.Fatalf("istiod exited:\n%s", p.log.String())
		default:
		}
		resp, err := http.Get("http://" + p.http + "/ready")
		if err != nil {
			return false, err.Error()
		}
		resp.Body.Close()
		return resp.StatusCode == 200, resp.Status
	})
	return p
}

// cpuSeconds is the user+system CPU time the process has used so far
// (/proc/<pid>/stat, in USER_HZ ticks of 1/100 s).
func (p *istiodProc) cpuSeconds() float64 {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	s := string(raw)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		return 0
	}
	utime, _ := strconv.ParseFloat(f[11], 64)
	stime, _ := strconv.ParseFloat(f[12], 64)
	return (utime + stime) / 100
}

// firstFullConfig waits for the agent's bootstrap and socket, then asks
// through the socket, as a proxyless client would, for the listener of
// target, its route, the cluster the route sends to and that cluster's
// endpoints; it returns once the endpoints arrived.
func firstFullConfig(a *agentProc, listener string, deadline time.Time) error {
	var node map[string]any
	for {
		if ok, detail := a.alive(); !ok {
			return fmt.Errorf("%s", detail)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no bootstrap and socket before the deadline")
		}
		raw, err := os.ReadFile(a.path(istiobin.GRPCBootstrapPath))
		var b struct{ Node map[string]any }
		if err == nil && json.Unmarshal(raw, &b) == nil && b.Node != nil {
			if _, err := os.Stat(istiobin.XDSSocket(a.dir)); err == nil {
				node = b.Node
				break
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	id, _ := node["id"].(string)
	md, _ := node["metadata"].(map[string]any)
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	c, err := adsc.Dial(ctx, "unix://"+istiobin.XDSSocket(a.dir), adsc.Config{NodeID: id, Metadata: md})
	if err != nil {
		return err
	}
	defer c.Close()

	await := func(typeURL, name string) (proto.Message, error) {
		if err := c.Watch(typeURL, name); err != nil {
			return nil, err
		}
		for {
			r, err := c.Next(time.Until(deadline))
			if err != nil {
				return nil, fmt.Errorf("%s %s: %v", xds.ShortType(typeURL), name, err)
			}
			if m := r.Resources[name]; r.TypeURL == typeURL && m != nil {
				return m, nil
			}
		}
	}
	m, err := await(xds.ListenerType, listener)
	if err != nil {
		return err
	}
	var conn hcm.HttpConnectionManager
	if err := m.(*listenerv3.Listener).GetApiListener().GetApiListener().UnmarshalTo(&conn); err != nil {
		return fmt.Errorf("listener %s: %v", listener, err)
	}
	m, err = await(xds.RouteType, conn.GetRds().GetRouteConfigName())
	if err != nil {
		return err
	}
	cluster := ""
	for _, vh := range m.(*routev3.RouteConfiguration).GetVirtualHosts() {
		for _, rt := range vh.GetRoutes() {
			if cluster == "" {
				cluster = rt.GetRoute().GetCluster()
			}
		}
	}
	if cluster == "" {
		return fmt.Errorf("route %s sends to no cluster", conn.GetRds().GetRouteConfigName())
	}
	if m, err = await(xds.ClusterType, cluster); err != nil {
		return err
	}
	if m.(*clusterv3.Cluster).GetType() != clusterv3.Cluster_EDS {
		return fmt.Errorf("cluster %s is not an EDS cluster", cluster)
	}
	if m, err = await(xds.EndpointType, cluster); err != nil {
		return err
	}
	for _, l := range m.(*endpointv3.ClusterLoadAssignment).GetEndpoints() {
		if len(l.GetLbEndpoints()) > 0 {
			return nil
		}
	}
	return fmt.Errorf("no endpoints for %s", cluster)
}

// BenchmarkAgentFirstConfig: Istio's pilot-agents, proxyless, each with its
// own pod, service account and token in one namespace, started together
// against the istiod binary's TLS port. Timed per agent: from its start to
// its client's first full config (listener, route, cluster, endpoints of
// one target) through the agent's socket, so through the agent's CA
// request, TokenReviews and the TLS xDS stream. Reported: p50 and max of
// that time, istiod's CPU seconds and the agents' CPU seconds per run,
// istiod's resident memory afterwards.
func BenchmarkAgentFirstConfig(b *testing.B) {
	env := kube.Shared(b)
	istiobin.PilotAgent(b) // fails early when not built
	istiodNS := env.NewNamespace(b, nil).Name
	target := env.NewNamespace(b, nil).Name
	// the target's endpoint is never called: the clients only read config
	createGRPCService(b, env, target, "echo", 7070, 7070)
	d := startIstiodProcess(b, env, istiodNS)
	listener := "echo." + target + ".svc.cluster.local:7070"
	for _, n := range []int{1, 50, 100} {
		b.Run(fmt.Sprintf("agents=%d", n), func(b *testing.B) {
			// each agent holds 2 inotify instances (its certificate watcher
			// and its file watcher); past the per-user limit it exits with
			// "couldn't initialize inotify: too many open files"
			if limit, used := inotifyInstances(); limit > 0 && used+agentInotify*n > limit {
				b.Skipf("%d agents need %d inotify instances, %d of fs.inotify.max_user_instances=%d are in use; "+
					"raise it (sysctl fs.inotify.max_user_instances=%d) to run this case", n, agentInotify*n, used, limit, used+agentInotify*n+16)
			}
			benchAgents(b, env, d, istiodNS, listener, n)
		})
	}
}

// agentInotify is how many inotify instances one proxyless pilot-agent
// holds (counted in /proc/<pid>/fd).
const agentInotify = 2

// inotifyInstances returns fs.inotify.max_user_instances and how many
// inotify instances the processes this user can read hold now (0, 0 when
// /proc does not tell).
func inotifyInstances() (limit, used int) {
	raw, err := os.ReadFile("/proc/sys/fs/inotify/max_user_instances")
	if err != nil {
		return 0, 0
	}
	limit, _ = strconv.Atoi(strings.TrimSpace(string(raw)))
	fds, _ := filepath.Glob("/proc/[0-9]*/fd/*")
	for _, fd := range fds {
		if target, err := os.Readlink(fd); err == nil && target == "anon_inode:inotify" {
			used++
		}
	}
	return limit, used
}

func benchAgents(b *testing.B, env *kube.Env, d *istiodProc, istiodNS, listener string, n int) {
	var times []time.Duration
	var istiodCPU, agentCPU float64
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		ns := env.NewNamespace(b, nil).Name
		root := rootCertPEM(b, env, ns)
		octet := agentRuns.Add(1) % 250
		agents := make([]*agentProc, n)
		for j := range agents {
			pod, sa := fmt.Sprintf("bench-%d", j), fmt.Sprintf("bench-%d", j)
			ip := fmt.Sprintf("10.206.%d.%d", octet, j+1)
			opts := createAgentPod(b, env, istiodNS, d.secure, ns, pod, ip, sa, map[string]string{"app": "bench"}, root)
			agents[j] = prepareAgent(b, opts)
		}
		results := make([]time.Duration, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		cpu0 := d.cpuSeconds()
		deadline := time.Now().Add(5 * time.Minute)
		b.StartTimer()
		for j, a := range agents {
			a.start(b)
			started := time.Now()
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[j] = firstFullConfig(a, listener, deadline)
				results[j] = time.Since(started)
			}()
		}
		wg.Wait()
		b.StopTimer()
		istiodCPU += d.cpuSeconds() - cpu0
		for j, err := range errs {
			if err != nil {
				b.Fatalf("agent %d: %v\nits log:\n%s\nistiod's log:\n%s", j, err, agents[j].log.String(), d.log.String())
			}
		}
		times = append(times, results...)
		var stops sync.WaitGroup
		for _, a := range agents {
			stops.Add(1)
			go func() {
				defer stops.Done()
				a.stop()
			}()
		}
		stops.Wait()
		for _, a := range agents {
			if st := a.cmd.ProcessState; st != nil {
				agentCPU += (st.UserTime() + st.SystemTime()).Seconds()
			}
		}
	}
	sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })
	b.ReportMetric(times[len(times)/2].Seconds(), "s-p50")
	b.ReportMetric(times[len(times)-1].Seconds(), "s-max")
	b.ReportMetric(istiodCPU/float64(b.N), "istiod-cpu-s/op")
	b.ReportMetric(agentCPU/float64(b.N), "agents-cpu-s/op")
	b.ReportMetric(procstat.RSSMiB(d.cmd.Process.Pid), "istiod-MB-rss")
}
