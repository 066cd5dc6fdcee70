package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/webhooks/admission"
)

// fakeValidate knows VirtualService: no spec.hosts is invalid, and so is
// spec.twice (a second problem), a spec that is not an object does not
// decode, spec.warn is a warning.
func fakeValidate(gvk config.GroupVersionKind, raw []byte) ([]string, error) {
	if gvk.Group != "networking.istio.io" || gvk.Kind != "VirtualService" {
		return nil, fmt.Errorf("%s: %w", gvk.Kind, ErrUnknownKind)
	}
	var obj struct {
		Spec json.RawMessage `json:"spec"`
	}
	_ = json.Unmarshal(raw, &obj)
	var spec struct {
		Hosts []string `json:"hosts"`
		Warn  string   `json:"warn"`
		Twice bool     `json:"twice"`
	}
	if err := json.Unmarshal(obj.Spec, &spec); err != nil {
		return nil, &DecodeError{Err: fmt.Errorf("spec: %v", err)}
	}
	var warnings []string
	if spec.Warn != "" {
		warnings = append(warnings, "spec.warn: "+spec.Warn)
	}
	noHosts := errors.New("spec.hosts: virtual service must have at least one host")
	if spec.Twice {
		return warnings, errors.Join(noHosts, errors.New("spec.twice: not twice"))
	}
	if len(spec.Hosts) == 0 {
		return warnings, noHosts
	}
	return warnings, nil
}

func newServer(t *testing.T, revision string) *httptest.Server {
	t.Helper()
	wh, err := New(Options{Validate: fakeValidate, Revision: revision})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	wh.Register(mux)
	srv := httptest.NewTLSServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

var vsResource = metav1.GroupVersionResource{Group: "networking.istio.io", Version: "v1", Resource: "virtualservices"}

func vsObject(labels map[string]string, spec string) []byte {
	l, _ := json.Marshal(labels)
	return []byte(`{"apiVersion":"networking.istio.io/v1","kind":"VirtualService","metadata":{"name":"reviews","namespace":"default","labels":` +
		string(l) + `},"spec":` + spec + `}`)
}

func review(op admissionv1.Operation, obj []byte) *admissionv1.AdmissionReview {
	return &admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{
			UID:       types.UID("uid-" + string(op)),
			Kind:      metav1.GroupVersionKind{Group: "networking.istio.io", Version: "v1", Kind: "VirtualService"},
			Resource:  vsResource,
			Namespace: "default",
			Name:      "reviews",
			Operation: op,
			Object:    runtime.RawExtension{Raw: obj},
		},
	}
}

func post(t *testing.T, srv *httptest.Server, path, contentType string, body []byte) (int, []byte) {
	t.Helper()
	resp, err := srv.Client().Post(srv.URL+path, contentType, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

func send(t *testing.T, srv *httptest.Server, ar *admissionv1.AdmissionReview) *admissionv1.AdmissionReview {
	t.Helper()
	body, _ := json.Marshal(ar)
	code, b := post(t, srv, "/validate", "application/json", body)
	if code != http.StatusOK {
		t.Fatalf("HTTP %d: %s", code, b)
	}
	var out admissionv1.AdmissionReview
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	if out.APIVersion != ar.APIVersion || out.Kind != "AdmissionReview" {
		t.Errorf("response typemeta %v, want the request's %v", out.TypeMeta, ar.TypeMeta)
	}
	if out.Response == nil {
		t.Fatalf("no response: %s", b)
	}
	if ar.Request != nil && out.Response.UID != ar.Request.UID {
		t.Errorf("uid %q, want %q", out.Response.UID, ar.Request.UID)
	}
	return &out
}

func message(r *admissionv1.AdmissionResponse) string {
	if r.Result == nil {
		return ""
	}
	return r.Result.Message
}

func TestAdmission(t *testing.T) {
	srv := newServer(t, "")
	cases := []struct {
		name     string
		ar       *admissionv1.AdmissionReview
		allowed  bool
		message  string
		warnings []string
	}{
		{name: "valid create", ar: review(admissionv1.Create, vsObject(nil, `{"hosts":["a"]}`)), allowed: true},
		{name: "valid update", ar: review(admissionv1.Update, vsObject(nil, `{"hosts":["a"]}`)), allowed: true},
		{name: "invalid create", ar: review(admissionv1.Create, vsObject(nil, `{}`)),
			message: "configuration is invalid: spec.hosts: virtual service must have at least one host"},
		{name: "invalid update", ar: review(admissionv1.Update, vsObject(nil, `{}`)),
			message: "configuration is invalid: spec.hosts: virtual service must have at least one host"},
		// several problems are listed as Istio's webhook lists them (go-multierror)
		{name: "two problems", ar: review(admissionv1.Create, vsObject(nil, `{"twice":true}`)),
			message: "configuration is invalid: 2 errors occurred:\n\t* spec.hosts: virtual service must have at least one host\n\t* spec.twice: not twice\n\n"},
		{name: "warnings", ar: review(admissionv1.Create, vsObject(nil, `{"hosts":["a"],"warn":"deprecated"}`)), allowed: true,
			warnings: []string{"spec.warn: deprecated"}},
		{name: "undecodable spec", ar: review(admissionv1.Create, vsObject(nil, `{"hosts":3}`)),
			message: "error decoding configuration: spec: json: cannot unmarshal number"},
		{name: "undecodable object", ar: review(admissionv1.Create, []byte(`[1]`)), message: "cannot decode configuration: "},
		{name: "unknown top-level field", ar: review(admissionv1.Create, append(vsObject(nil, `{"hosts":["a"]}`)[:0:0],
			[]byte(`{"apiVersion":"networking.istio.io/v1","kind":"VirtualService","metadata":{"name":"reviews"},"spec":{"hosts":["a"]},"extra":1}`)...)),
			message: `unknown field "extra" on VirtualService resource default/reviews`},
		{name: "delete", ar: review(admissionv1.Delete, nil), allowed: true},
		{name: "connect", ar: review(admissionv1.Connect, nil), allowed: true},
		{name: "unknown kind", ar: review(admissionv1.Create,
			[]byte(`{"apiVersion":"networking.istio.io/v1","kind":"FutureKind","metadata":{"name":"x"},"spec":{}}`)), allowed: true},
		{name: "other revision not validated", ar: review(admissionv1.Create, vsObject(map[string]string{"istio.io/rev": "canary"}, `{}`)), allowed: true},
		{name: "own revision validated", ar: review(admissionv1.Create, vsObject(map[string]string{"istio.io/rev": "default"}, `{}`)),
			message: "configuration is invalid: "},
		{name: "v1beta1 review", ar: func() *admissionv1.AdmissionReview {
			ar := review(admissionv1.Create, vsObject(nil, `{}`))
			ar.APIVersion = "admission.k8s.io/v1beta1"
			return ar
		}(), message: "configuration is invalid: "},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := send(t, srv, c.ar).Response
			if r.Allowed != c.allowed {
				t.Fatalf("allowed %v, want %v (%q)", r.Allowed, c.allowed, message(r))
			}
			if !strings.HasPrefix(message(r), c.message) {
				t.Errorf("message %q, want prefix %q", message(r), c.message)
			}
			if c.allowed && r.Result != nil {
				t.Errorf("an allowed response has a status: %v", r.Result)
			}
			if fmt.Sprint(r.Warnings) != fmt.Sprint(c.warnings) {
				t.Errorf("warnings %q, want %q", r.Warnings, c.warnings)
			}
		})
	}
}

func TestRevisioned(t *testing.T) {
	srv := newServer(t, "canary")
	if r := send(t, srv, review(admissionv1.Create, vsObject(map[string]string{"istio.io/rev": "canary"}, `{}`))).Response; r.Allowed {
		t.Error("an invalid object of this revision is allowed")
	}
	if r := send(t, srv, review(admissionv1.Create, vsObject(map[string]string{"istio.io/rev": "default"}, `{}`))).Response; !r.Allowed {
		t.Errorf("an object of the default revision is denied by canary: %s", message(r))
	}
	// unlabelled objects reach a revision's webhook only if it is configured so: validated
	if r := send(t, srv, review(admissionv1.Create, vsObject(nil, `{}`))).Response; r.Allowed {
		t.Error("an invalid unlabelled object is allowed")
	}
}

func TestPaths(t *testing.T) {
	srv := newServer(t, "")
	body, _ := json.Marshal(review(admissionv1.Create, vsObject(nil, `{}`)))
	for _, p := range []string{"/validate", "/validate/", "/validate/networking.istio.io/v1/virtualservices"} {
		if code, b := post(t, srv, p, "application/json", body); code != 200 || !strings.Contains(string(b), "configuration is invalid") {
			t.Errorf("%s: %d %s", p, code, b)
		}
	}
	if code, _ := post(t, srv, "/admitpilot", "application/json", body); code != http.StatusNotFound {
		t.Errorf("/admitpilot: %d, want 404 (removed in Istio)", code)
	}
}

func TestHTTPErrors(t *testing.T) {
	srv := newServer(t, "")
	good, _ := json.Marshal(review(admissionv1.Create, vsObject(nil, `{"hosts":["a"]}`)))
	before400 := counterValue(metricHTTPError.WithLabelValues("400"))
	before415 := counterValue(metricHTTPError.WithLabelValues("415"))

	if code, b := post(t, srv, "/validate", "application/json", nil); code != 400 || !strings.Contains(string(b), "no body found") {
		t.Errorf("empty body: %d %s", code, b)
	}
	if code, b := post(t, srv, "/validate", "text/plain", good); code != 415 || !strings.Contains(string(b), "want `application/json`") {
		t.Errorf("wrong content type: %d %s", code, b)
	}
	if code, b := post(t, srv, "/validate", "application/json; charset=utf-8", good); code != 200 {
		t.Errorf("content type with parameters: %d %s", code, b)
	}
	big := bytes.Repeat([]byte(" "), int(admission.MaxRequestBodyBytes)+1)
	if code, b := post(t, srv, "/validate", "application/json", big); code != 400 || !strings.Contains(string(b), "too large") {
		t.Errorf("too large: %d %.200s", code, b)
	}
	if d := counterValue(metricHTTPError.WithLabelValues("400")) - before400; d != 2 {
		t.Errorf("galley_validation_http_error{status=400} +%v, want +2", d)
	}
	if d := counterValue(metricHTTPError.WithLabelValues("415")) - before415; d != 1 {
		t.Errorf("galley_validation_http_error{status=415} +%v, want +1", d)
	}

	// a body that is not an AdmissionReview is answered with a denial, as Istio does
	for name, body := range map[string]string{
		"not JSON":      `{"apiVersion":`,
		"wrong kind":    `{"apiVersion":"v1","kind":"Pod"}`,
		"no request":    `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}`,
		"request array": `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":[]}`,
	} {
		code, b := post(t, srv, "/validate", "application/json", []byte(body))
		var out admissionv1.AdmissionReview
		if err := json.Unmarshal(b, &out); code != 200 || err != nil || out.Response == nil || out.Response.Allowed ||
			!strings.HasPrefix(message(out.Response), "could not decode body: ") {
			t.Errorf("%s: %d %s", name, code, b)
		}
	}
}

func TestMetrics(t *testing.T) {
	srv := newServer(t, "")
	g, v, r := vsResource.Group, vsResource.Version, vsResource.Resource
	passed := func() float64 { return counterValue(metricPassed.WithLabelValues(g, v, r)) }
	failed := func(reason string) float64 { return counterValue(metricFailed.WithLabelValues(g, v, r, reason)) }
	p0, inv0, op0, unk0, conv0 := passed(), failed(reasonInvalidConfig), failed(reasonUnsupportedOperation), failed(reasonUnknownType), failed(reasonCRDConversionError)

	send(t, srv, review(admissionv1.Create, vsObject(nil, `{"hosts":["a"]}`)))
	send(t, srv, review(admissionv1.Create, vsObject(nil, `{}`)))
	send(t, srv, review(admissionv1.Update, vsObject(nil, `{}`)))
	send(t, srv, review(admissionv1.Create, vsObject(nil, `{"hosts":3}`)))
	send(t, srv, review(admissionv1.Delete, nil))
	send(t, srv, review(admissionv1.Create, []byte(`{"apiVersion":"networking.istio.io/v1","kind":"FutureKind","metadata":{"name":"x"}}`)))
	dry := review(admissionv1.Create, vsObject(nil, `{}`))
	dry.Request.DryRun = new(bool)
	*dry.Request.DryRun = true
	if r := send(t, srv, dry).Response; r.Allowed {
		t.Error("a dry run of an invalid object is allowed")
	}

	for name, d := range map[string][2]float64{
		"passed":                {passed() - p0, 1},
		"failed invalid":        {failed(reasonInvalidConfig) - inv0, 2}, // the dry run is not counted
		"failed unsupported op": {failed(reasonUnsupportedOperation) - op0, 1},
		"failed unknown type":   {failed(reasonUnknownType) - unk0, 1},
		"failed conversion":     {failed(reasonCRDConversionError) - conv0, 1},
	} {
		if d[0] != d[1] {
			t.Errorf("%s: +%v, want +%v", name, d[0], d[1])
		}
	}
}

func TestNewRequiresValidator(t *testing.T) {
	if _, err := New(Options{}); err == nil {
		t.Error("New without a validator succeeded")
	}
}

func counterValue(c prometheus.Counter) float64 {
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		panic(err)
	}
	return m.GetCounter().GetValue()
}
