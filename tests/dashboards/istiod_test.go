package dashboards

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	networking "istio.io/api/networking/v1alpha3"
	clientnetworking "istio.io/client-go/pkg/apis/networking/v1"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/meshplane/istiod/pilot/pkg/bootstrap"
	"github.com/meshplane/istiod/pilot/pkg/xds"
	"github.com/meshplane/istiod/pilot/pkg/xds/adsc"
	"github.com/meshplane/istiod/tests/helmbin"
	"github.com/meshplane/istiod/tests/kube"
	"github.com/meshplane/istiod/tests/testproc"
)

// istiod is an in-process control plane against the test API server.
type istiod struct {
	srv *bootstrap.Server
}

// startIstiod runs istiod in Kubernetes mode with namespace ns (where the
// mesh and injector ConfigMaps of Istio's chart are put first) on free
// loopback ports, the webhook port included; it stops when the test ends.
func startIstiod(t *testing.T, env *kube.Env, ns string) *istiod {
	t.Helper()
	for _, o := range helmbin.IstioDiscovery(t, "istio-system") {
		if o.GetKind() != "ConfigMap" || (o.GetName() != "istio" && o.GetName() != "istio-sidecar-injector") {
			continue
		}
		cm := &corev1.ConfigMap{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, cm); err != nil {
			t.Fatal(err)
		}
		cm.Namespace = ns
		if _, err := env.Kube.CoreV1().ConfigMaps(ns).Create(context.Background(), cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	args := bootstrap.DefaultArgs()
	args.KubeConfig = env.Kubeconfig
	args.Namespace = ns
	args.HTTPAddr, args.MonitoringAddr, args.GRPCAddr = "127.0.0.1:0", "127.0.0.1:0", "127.0.0.1:0"
	args.SecureGRPCAddr, args.HTTPSAddr = "127.0.0.1:0", "127.0.0.1:0"
	args.MeshConfigFile = filepath.Join(t.TempDir(), "no-mesh-file")
	args.NetworksConfigFile = filepath.Join(t.TempDir(), "no-networks-file")
	args.ShutdownDuration = 5 * time.Second
	args.PodName = "istiod-dashboards"
	srv, err := bootstrap.NewServer(args)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	d := &istiod{srv: srv}
	eventually(t, "istiod ready", func() (bool, string) {
		code, body := d.fetch(d.srv.HTTPAddr(), "/ready")
		return code == http.StatusOK, fmt.Sprintf("%d %s", code, body)
	})
	return d
}

func (d *istiod) fetch(addr, path string) (int, string) {
	resp, err := http.Get("http://" + addr + path)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func (d *istiod) get(t *testing.T, addr, path string) string {
	t.Helper()
	code, body := d.fetch(addr, path)
	if code != http.StatusOK {
		t.Fatalf("GET %s: %d %s", path, code, body)
	}
	return body
}

func eventually(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	testproc.Eventually(t, 30*time.Second, what, cond)
}

// exerciseRecordingPaths runs what records the metrics the dashboard
// reads: a Service and a VirtualService (registry and config events, push
// triggers, pushes), a sidecar rejecting CDS, EDS, LDS and RDS, a request
// over the receive limit (an internal error), and validation and injection
// webhook calls that pass and that fail.
func exerciseRecordingPaths(t *testing.T, env *kube.Env, d *istiod, ns string) {
	t.Helper()
	ctx := context.Background()
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "dash", Namespace: ns},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "dash"},
			Ports: []corev1.ServicePort{{Name: "http", Port: 80}}}}
	if _, err := env.Kube.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	host := "dash." + ns + ".svc.cluster.local"
	vs := &clientnetworking.VirtualService{ObjectMeta: metav1.ObjectMeta{Name: "dash", Namespace: ns},
		Spec: networking.VirtualService{Hosts: []string{host},
			Http: []*networking.HTTPRoute{{Route: []*networking.HTTPRouteDestination{{Destination: &networking.Destination{Host: host}}}}}}}
	if _, err := env.Istio.NetworkingV1().VirtualServices(ns).Create(ctx, vs, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rejectEachType(t, d, ns, host)
	oversizeRequest(t, d)
	callWebhooks(t, d, ns)
}

// rejectEachType NACKs the first response of each of CDS, EDS, LDS and RDS
// of a sidecar in ns.
func rejectEachType(t *testing.T, d *istiod, ns, host string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c, err := adsc.Dial(ctx, d.srv.GRPCAddr(), adsc.Config{
		NodeID:    "sidecar~10.1.0.1~dash-1." + ns + "~" + ns + ".svc.cluster.local",
		Metadata:  map[string]any{"NAMESPACE": ns, "ISTIO_VERSION": "1.31.0"},
		NoAutoACK: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, w := range []struct {
		typeURL string
		names   []string
	}{
		{xds.ClusterType, nil},
		{xds.EndpointType, []string{"outbound|80||" + host}},
		{xds.ListenerType, nil},
		{xds.RouteType, []string{"80"}},
	} {
		if err := c.Watch(w.typeURL, w.names...); err != nil {
			t.Fatal(err)
		}
		for {
			r, err := c.Next(30 * time.Second)
			if err != nil {
				t.Fatalf("waiting for %s: %v", w.typeURL, err)
			}
			if r.TypeURL != w.typeURL {
				if err := c.ACK(r); err != nil { // a push of a type watched before
					t.Fatal(err)
				}
				continue
			}
			if err := c.NACK(r, "rejected by the dashboard test"); err != nil {
				t.Fatal(err)
			}
			break
		}
	}
	// the stream stays open until every rejection is counted: a CDS
	// response from a push may come before the last NACK is read, and a
	// stream closed then would never have it handled
	eventually(t, "the rejections counted", func() (bool, string) {
		_, body := d.fetch(d.srv.MonitoringAddr(), "/metrics")
		for _, m := range []string{"pilot_xds_cds_reject", "pilot_xds_eds_reject", "pilot_xds_lds_reject", "pilot_xds_rds_reject"} {
			if !strings.Contains(body, "\n"+m+"{") && !strings.Contains(body, "\n"+m+" ") {
				return false, m + " not on /metrics"
			}
		}
		return true, ""
	})
}

// oversizeRequest sends a request over the 4 MiB receive limit: the stream
// ends with ResourceExhausted, an internal error for Istio.
func oversizeRequest(t *testing.T, d *istiod) {
	t.Helper()
	c, err := adsc.Dial(context.Background(), d.srv.GRPCAddr(), adsc.Config{NodeID: "sidecar~10.1.0.2~big.default~default.svc.cluster.local"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	req := &discovery.DiscoveryRequest{TypeUrl: xds.ClusterType, ResourceNames: []string{strings.Repeat("x", 5<<20)}}
	if err := c.SendSotW(req); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Next(30 * time.Second); status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("oversize request: %v, want ResourceExhausted", err)
	}
}

// callWebhooks posts a valid and an invalid VirtualService to /validate,
// a pod and a body that is no AdmissionReview to /inject.
func callWebhooks(t *testing.T, d *istiod, ns string) {
	t.Helper()
	client := &http.Client{Timeout: 30 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // test: istiod's own loopback certificate
	post := func(path string, body []byte) *admissionv1.AdmissionReview {
		t.Helper()
		resp, err := client.Post("https://"+d.srv.HTTPSAddr()+path, "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var out admissionv1.AdmissionReview
		if resp.StatusCode != http.StatusOK || json.Unmarshal(b, &out) != nil || out.Response == nil {
			t.Fatalf("POST %s: %d %s", path, resp.StatusCode, b)
		}
		return &out
	}
	vsReview := func(spec string) []byte {
		obj := `{"apiVersion":"networking.istio.io/v1","kind":"VirtualService","metadata":{"name":"v","namespace":"` + ns + `"},"spec":` + spec + `}`
		return review(ns, metav1.GroupVersionResource{Group: "networking.istio.io", Version: "v1", Resource: "virtualservices"},
			metav1.GroupVersionKind{Group: "networking.istio.io", Version: "v1", Kind: "VirtualService"}, obj)
	}
	if r := post("/validate", vsReview(`{"hosts":["a"],"http":[{"route":[{"destination":{"host":"a"}}]}]}`)); !r.Response.Allowed {
		t.Errorf("a valid VirtualService was denied: %v", r.Response.Result)
	}
	if r := post("/validate", vsReview(`{"hosts":["a"]}`)); r.Response.Allowed {
		t.Error("a VirtualService without routes was admitted")
	}
	pod := `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"` + ns + `"},"spec":{"containers":[{"name":"app","image":"app"}]}}`
	if r := post("/inject", review(ns, metav1.GroupVersionResource{Version: "v1", Resource: "pods"},
		metav1.GroupVersionKind{Version: "v1", Kind: "Pod"}, pod)); !r.Response.Allowed || len(r.Response.Patch) == 0 {
		t.Errorf("the pod was not injected: %v", r.Response.Result)
	}
	// answered with an error: a failure (and, as in Istio, a success too)
	post("/inject", []byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}`))
}

func review(ns string, res metav1.GroupVersionResource, kind metav1.GroupVersionKind, obj string) []byte {
	b, _ := json.Marshal(admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{UID: "dashboards", Kind: kind, Resource: res, Namespace: ns,
			Operation: admissionv1.Create, Object: runtime.RawExtension{Raw: []byte(obj)}},
	})
	return b
}
