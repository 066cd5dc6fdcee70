package integration

import (
	"github.com/meshplane/istiod/tests/testproc"

	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	networking "istio.io/api/networking/v1alpha3"
	clientnetworking "istio.io/client-go/pkg/apis/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/meshplane/istiod/tests/kube"
	"github.com/meshplane/istiod/tests/procstat"
)

// createObjects writes n VirtualServices and DestinationRules over 20 namespaces.
func createObjects(b *testing.B, env *kube.Env, n int) {
	b.Helper()
	ctx := context.Background()
	var nss []string
	for i := 0; i < 20; i++ {
		nss = append(nss, env.NewNamespace(b, nil).Name)
	}
	work := make(chan int)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	for w := 0; w < 16; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				ns := nss[i%len(nss)]
				var err error
				if i%2 == 0 {
					_, err = env.Istio.NetworkingV1().VirtualServices(ns).Create(ctx, vs(fmt.Sprintf("vs-%d", i), ns, nil, fmt.Sprintf("svc-%d", i)), metav1.CreateOptions{})
				} else {
					dr := &clientnetworking.DestinationRule{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("dr-%d", i), Namespace: ns},
						Spec: networking.DestinationRule{Host: fmt.Sprintf("svc-%d", i), Subsets: []*networking.Subset{{Name: "v1", Labels: map[string]string{"version": "v1"}}}}}
					_, err = env.Istio.NetworkingV1().DestinationRules(ns).Create(ctx, dr, metav1.CreateOptions{})
				}
				if err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
				}
			}
		}()
	}
	for i := 0; i < n; i++ {
		work <- i
	}
	close(work)
	wg.Wait()
	if firstErr != nil {
		b.Fatal(firstErr)
	}
}

func freeAddr(b *testing.B) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

type syncBuffer struct {
	mu sync.Mutex
	sb strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sb.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sb.String()
}

// BenchmarkKubeStartup5k: 5,000 Istio objects in a real API server; the
// istiod binary is started against it. Reported: seconds from process start
// to /ready, resident memory once synced, and the latency of one change
// reaching /debug/configz.
func BenchmarkKubeStartup5k(b *testing.B) {
	env := kube.Start(b, kube.WithCRDs("virtualservices.networking.istio.io", "destinationrules.networking.istio.io"))
	createObjects(b, env, 5000)
	bin, err := testproc.BuildIstiod(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	var toReady, change time.Duration
	var rssTotal float64
	for i := 0; i < b.N; i++ {
		httpAddr, monAddr := freeAddr(b), freeAddr(b)
		cmd := exec.Command(bin, "discovery", "--kubeconfig", env.Kubeconfig, "--httpAddr", httpAddr, "--monitoringAddr", monAddr,
			"--grpcAddr", freeAddr(b), "--secureGRPCAddr", freeAddr(b), "--httpsAddr", "127.0.0.1:0",
			"--meshConfig", "/nonexistent", "--networksConfig", "/nonexistent", "-n", "istio-system",
			"--log_output_level", "default:warn,kube:warn,mesh:warn,bootstrap:info")
		cmd.Env = append(os.Environ(), "ISTIOD_CA_DIR="+filepath.Join(b.TempDir(), "ca"))
		logs := &syncBuffer{}
		cmd.Stdout, cmd.Stderr = logs, logs
		begin := time.Now()
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		for {
			resp, err := http.Get("http://" + httpAddr + "/ready")
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode == 200 {
					break
				}
			}
			if time.Since(begin) > 3*time.Minute {
				b.Fatalf("not ready:\n%s", logs.String())
			}
			time.Sleep(2 * time.Millisecond)
		}
		toReady += time.Since(begin)
		for !strings.Contains(logs.String(), "config sources synced") {
			time.Sleep(2 * time.Millisecond)
		}
		rssTotal += procstat.RSSMiB(cmd.Process.Pid)

		// one change, timed until configz shows it
		ns := env.NewNamespace(b, nil).Name
		name := fmt.Sprintf("probe-%d", i)
		t0 := time.Now()
		if _, err := env.Istio.NetworkingV1().VirtualServices(ns).Create(context.Background(), vs(name, ns, nil, name), metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		for {
			resp, err := http.Get("http://" + httpAddr + "/debug/configz")
			if err == nil {
				body := new(strings.Builder)
				_, _ = ioCopy(body, resp)
				if strings.Contains(body.String(), `"name":"`+name+`"`) || strings.Contains(body.String(), `"name": "`+name+`"`) {
					break
				}
			}
			time.Sleep(time.Millisecond)
		}
		change += time.Since(t0)
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	}
	b.ReportMetric(toReady.Seconds()/float64(b.N), "s-to-ready")
	b.ReportMetric(rssTotal/float64(b.N), "MB-rss")
	b.ReportMetric(float64(change.Milliseconds())/float64(b.N), "ms-change-to-configz")
}

func ioCopy(dst *strings.Builder, resp *http.Response) (int64, error) {
	defer resp.Body.Close()
	buf := make([]byte, 64<<10)
	var n int64
	for {
		k, err := resp.Body.Read(buf)
		dst.Write(buf[:k])
		n += int64(k)
		if err != nil {
			return n, nil
		}
	}
}
