package inject_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	meshconfig "istio.io/api/mesh/v1alpha1"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/meshplane/istiod/pkg/config/mesh"
	kinject "github.com/meshplane/istiod/pkg/kube/inject"
	"github.com/meshplane/istiod/pkg/monitoring"
	"github.com/meshplane/istiod/pkg/webhooks/inject"
	"github.com/meshplane/istiod/tests/injecttest"
)

func newWebhook(t testing.TB, cfg *kinject.Config, m *meshconfig.MeshConfig) *http.ServeMux {
	t.Helper()
	wh, err := inject.New(inject.Options{
		Config:         func() *kinject.Config { return cfg },
		Mesh:           func() *meshconfig.MeshConfig { return m },
		NativeSidecars: kinject.NativeSidecarsDisabled,
		Revision:       "default",
	})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	wh.Register(mux)
	return mux
}

func post(t testing.TB, h http.Handler, path, contentType string, body []byte) *httptest.ResponseRecorder {
	t.Helper()
	r := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body))
	if contentType != "" {
		r.Header.Set("Content-Type", contentType)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

func decode(t *testing.T, w *httptest.ResponseRecorder) admissionv1.AdmissionReview {
	t.Helper()
	if w.Code != http.StatusOK {
		t.Fatalf("status %d: %s", w.Code, w.Body)
	}
	var ar admissionv1.AdmissionReview
	if err := json.Unmarshal(w.Body.Bytes(), &ar); err != nil {
		t.Fatalf("response is no AdmissionReview: %v\n%s", err, w.Body)
	}
	if ar.Response == nil {
		t.Fatalf("no response: %s", w.Body)
	}
	return ar
}

func metric(name string) float64 {
	mfs, _ := monitoring.Registry.Gather()
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if m.GetCounter() != nil {
				return m.GetCounter().GetValue()
			}
			if m.GetHistogram() != nil {
				return float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return 0
}

// TestReferenceExchange posts the recorded AdmissionReview and compares the
// answer with Istio's: uid, allowed, patch type and the patch (the pods
// both make, and their operations as a multiset: injecttest.PatchDiff).
func TestReferenceExchange(t *testing.T) {
	ref := injecttest.LoadReference(t)
	cfg, err := kinject.ParseConfig(ref.ConfigText, ref.ValuesText)
	if err != nil {
		t.Fatal(err)
	}
	h := newWebhook(t, cfg, ref.Mesh)
	body, err := os.ReadFile(filepath.Join(ref.Dir, "real/admission/inject.request.json"))
	if err != nil {
		t.Fatal(err)
	}
	before := metric("sidecar_injection_requests_total")
	ar := decode(t, post(t, h, "/inject", "application/json", body))
	if got := metric("sidecar_injection_requests_total") - before; got != 1 {
		t.Errorf("requests counted %v, want 1", got)
	}
	var want struct {
		APIVersion string `json:"apiVersion"`
		Response   struct {
			UID       string          `json:"uid"`
			Allowed   bool            `json:"allowed"`
			PatchType string          `json:"patchType"`
			Patch     json.RawMessage `json:"patch"`
		} `json:"response"`
	}
	b, _ := os.ReadFile(filepath.Join(ref.Dir, "real/admission/inject.response.json"))
	if err := json.Unmarshal(b, &want); err != nil {
		t.Fatal(err)
	}
	if string(ar.Response.UID) != want.Response.UID || ar.Response.Allowed != want.Response.Allowed ||
		ar.APIVersion != want.APIVersion || ar.Response.PatchType == nil || string(*ar.Response.PatchType) != want.Response.PatchType {
		t.Errorf("response header: uid %s allowed %v apiVersion %s patchType %v; want %+v", ar.Response.UID,
			ar.Response.Allowed, ar.APIVersion, ar.Response.PatchType, want.Response)
	}
	var req struct {
		Request struct {
			Object json.RawMessage `json:"object"`
		} `json:"request"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{}
	if err := json.Unmarshal(req.Request.Object, pod); err != nil {
		t.Fatal(err)
	}
	if d := injecttest.PatchDiff(t, pod, want.Response.Patch, ar.Response.Patch); len(d) > 0 {
		t.Errorf("patch differs from Istio's:\n%s", strings.Join(d, "\n"))
	}
}

const podReview = `{"apiVersion":"admission.k8s.io/%s","kind":"AdmissionReview","request":{"uid":"u-1","kind":{"group":"","version":"v1","kind":"Pod"},
"resource":{"group":"","version":"v1","resource":"pods"},"namespace":"ns1","operation":"CREATE",
"object":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","labels":{"app":"a"}%s},"spec":{"serviceAccountName":"sa","containers":[{"name":"app","image":"img"}]}}}}`

func review(version, extraMeta string) []byte {
	return []byte(strings.Replace(strings.Replace(podReview, "%s", version, 1), "%s", extraMeta, 1))
}

const simpleConfig = `
policy: enabled
templates:
  sidecar: |
    spec:
      containers:
      - name: istio-proxy
        image: proxy
        env:
        - name: CLUSTER
          value: {{ .Values.global.multiCluster.clusterName | quote }}
  broken: |
    spec:
      containers: {{ fail "no such thing" }}
  notyaml: |
    spec: [
`

func simpleWebhook(t *testing.T) *http.ServeMux {
	cfg, err := kinject.ParseConfig(simpleConfig, `{"global":{"multiCluster":{"clusterName":"c0"}}}`)
	if err != nil {
		t.Fatal(err)
	}
	return newWebhook(t, cfg, mesh.DefaultMeshConfig())
}

func TestAdmission(t *testing.T) {
	h := simpleWebhook(t)
	for _, v := range []string{"v1", "v1beta1"} {
		ar := decode(t, post(t, h, "/inject", "application/json", review(v, "")))
		if ar.APIVersion != "admission.k8s.io/"+v || ar.Response.UID != "u-1" || !ar.Response.Allowed || len(ar.Response.Patch) == 0 {
			t.Errorf("%s: apiVersion %s uid %s allowed %v patch %d bytes", v, ar.APIVersion, ar.Response.UID, ar.Response.Allowed, len(ar.Response.Patch))
		}
	}
}

func TestPathParameters(t *testing.T) {
	got := inject.ParseInjectPath("/inject/cluster/east/net/network1/extra--var/a--slash--b/odd")
	want := map[string]string{"ISTIO_META_CLUSTER_ID": "east", "ISTIO_META_NETWORK": "network1", "EXTRA--VAR": "a/b"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	if got := inject.ParseInjectPath("/inject/:ENV:cluster=c1:ENV:FOO=bar:ENV:=x"); !reflect.DeepEqual(got,
		map[string]string{"ISTIO_META_CLUSTER_ID": "c1", "FOO": "bar"}) {
		t.Errorf("ENV form: %v", got)
	}
	// the path's cluster overrides the values' and replaces the variable
	h := simpleWebhook(t)
	ar := decode(t, post(t, h, "/inject/cluster/east/net/n1", "application/json", review("v1", "")))
	patch := string(ar.Response.Patch)
	for _, s := range []string{`"name":"ISTIO_META_CLUSTER_ID","value":"east"`, `"name":"ISTIO_META_NETWORK","value":"n1"`,
		`"path":"/metadata/labels/topology.istio.io~1network","value":"n1"`} {
		if !strings.Contains(patch, s) {
			t.Errorf("patch lacks %s:\n%s", s, patch)
		}
	}
}

func TestBadInput(t *testing.T) {
	h := simpleWebhook(t)
	cases := []struct {
		name, path, contentType string
		body                    []byte
		status                  int
		message                 string
	}{
		{"empty body", "/inject", "application/json", nil, http.StatusBadRequest, "no body found"},
		{"content type", "/inject", "text/plain", review("v1", ""), http.StatusUnsupportedMediaType, "invalid Content-Type"},
		{"not JSON", "/inject", "application/json", []byte("{nope"), http.StatusOK, "invalid character"},
		{"not a review", "/inject", "application/json", []byte(`{"kind":"Pod","apiVersion":"v1"}`), http.StatusOK, "not an AdmissionReview"},
		{"no request", "/inject", "application/json", []byte(`{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1"}`), http.StatusOK, "no request"},
		{"template fails", "/inject", "application/json", review("v1", `,"annotations":{"inject.istio.io/templates":"broken"}`), http.StatusOK, "no such thing"},
		{"template output not YAML", "/inject", "application/json", review("v1", `,"annotations":{"inject.istio.io/templates":"notyaml"}`), http.StatusOK, "failed applying injection overlay"},
		{"unknown template", "/inject", "application/json", review("v1", `,"annotations":{"inject.istio.io/templates":"nope"}`), http.StatusOK, `requested template "nope" not found`},
		{"bad annotation", "/inject", "application/json", review("v1", `,"annotations":{"status.sidecar.istio.io/port":"x"}`), http.StatusOK, "invalid value 'x' for annotation 'status.sidecar.istio.io/port'"},
		{"bad pod", "/inject", "application/json", []byte(`{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","request":{"uid":"u","object":{"spec":{"containers":"x"}}}}`), http.StatusOK, "could not decode the pod"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := metric("sidecar_injection_failure_total")
			w := post(t, h, c.path, c.contentType, c.body)
			if w.Code != c.status {
				t.Fatalf("status %d, want %d: %s", w.Code, c.status, w.Body)
			}
			text := w.Body.String()
			if c.status == http.StatusOK {
				ar := decode(t, w)
				if ar.Response.Allowed || ar.Response.Result == nil {
					t.Fatalf("not an admission error: %s", w.Body)
				}
				text = ar.Response.Result.Message
			}
			if !strings.Contains(text, c.message) {
				t.Errorf("answer lacks %q: %s", c.message, text)
			}
			if got := metric("sidecar_injection_failure_total") - before; got != 1 {
				t.Errorf("failures counted %v, want 1", got)
			}
		})
	}
}

func TestSkip(t *testing.T) {
	h := simpleWebhook(t)
	before := metric("sidecar_injection_skip_total")
	ar := decode(t, post(t, h, "/inject", "application/json", review("v1", `,"annotations":{"sidecar.istio.io/inject":"false"}`)))
	if !ar.Response.Allowed || ar.Response.Patch != nil {
		t.Errorf("want allowed without patch: %+v", ar.Response)
	}
	if got := metric("sidecar_injection_skip_total") - before; got != 1 {
		t.Errorf("skips counted %v", got)
	}
}

func TestNoConfig(t *testing.T) {
	h := newWebhook(t, nil, mesh.DefaultMeshConfig())
	ar := decode(t, post(t, h, "/inject", "application/json", review("v1", "")))
	if ar.Response.Allowed || !strings.Contains(ar.Response.Result.Message, "no injection config") {
		t.Errorf("want an admission error: %+v", ar.Response)
	}
}

// TestMetricNames checks the names of Istio's metrics (real/metrics.txt)
// are the ones registered.
func TestMetricNames(t *testing.T) {
	h := simpleWebhook(t)
	decode(t, post(t, h, "/inject", "application/json", review("v1", "")))
	post(t, h, "/inject", "text/plain", review("v1", ""))
	decode(t, post(t, h, "/inject", "application/json", review("v1", `,"annotations":{"sidecar.istio.io/inject":"false"}`)))
	for _, n := range []string{"sidecar_injection_requests_total", "sidecar_injection_success_total",
		"sidecar_injection_failure_total", "sidecar_injection_skip_total", "sidecar_injection_time_seconds"} {
		if c, err := testutil.GatherAndCount(monitoring.Registry, n); err != nil || c == 0 {
			t.Errorf("%s: %d series, %v", n, c, err)
		}
	}
}
