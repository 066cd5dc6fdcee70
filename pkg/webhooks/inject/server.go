package inject

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	meshconfig "istio.io/api/mesh/v1alpha1"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/meshplane/istiod/pkg/kube/inject"
	"github.com/meshplane/istiod/pkg/log"
	"github.com/meshplane/istiod/pkg/webhooks/admission"
)

var scope = log.RegisterScope("injectionServer", "sidecar injection webhook server")

// Options configures the webhook. Config and Mesh are required; each
// request reads them once.
type Options struct {
	// Config returns the current injector config (nil: none yet; requests
	// are then refused with an admission error).
	Config func() *inject.Config
	// Mesh returns the current mesh config.
	Mesh func() *meshconfig.MeshConfig
	// ProxyConfigs returns the ProxyConfig resources (nil: none).
	ProxyConfigs func() *inject.ProxyConfigs
	// NativeSidecars is ENABLE_NATIVE_SIDECARS; Nodes is read in auto mode.
	NativeSidecars inject.NativeSidecarMode
	Nodes          inject.NodeLister
	// Revision is istiod's revision.
	Revision string
	// CompliancePolicy is COMPLIANCE_POLICY.
	CompliancePolicy string
	// Now is the clock of the time metric (time.Now when nil).
	Now func() time.Time
}

// Webhook serves the injection admission webhook.
type Webhook struct{ o Options }

// New returns the webhook.
func New(o Options) (*Webhook, error) {
	if o.Config == nil || o.Mesh == nil {
		return nil, errors.New("injection webhook: Config and Mesh are required")
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.NativeSidecars == "" {
		o.NativeSidecars = inject.NativeSidecarsAuto
	}
	return &Webhook{o: o}, nil
}

// Register installs the webhook on mux at /inject and /inject/.
func (wh *Webhook) Register(mux *http.ServeMux) {
	mux.Handle("/inject", wh)
	mux.Handle("/inject/", wh)
}

// ServeHTTP answers one AdmissionReview. As Istio: an unreadable or empty
// body is 400 and a content type other than application/json 415 (both
// counted as failures); a body that is not an AdmissionReview, or a pod
// that cannot be injected, is answered (200) with an admission error.
func (wh *Webhook) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	metricRequests.WithLabelValues().Inc()
	start := wh.o.Now()
	defer func() { metricTime.WithLabelValues().Observe(wh.o.Now().Sub(start).Seconds()) }()
	body, err := admission.ReadBody(r)
	if err != nil {
		failed(r.URL.Path, err.Error())
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if len(body) == 0 {
		failed(r.URL.Path, "no body found")
		http.Error(w, "no body found", http.StatusBadRequest)
		return
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/json" {
		failed(r.URL.Path, fmt.Sprintf("contentType=%s, expect application/json", ct))
		http.Error(w, "invalid Content-Type, want `application/json`", http.StatusUnsupportedMediaType)
		return
	}
	out := admissionv1.AdmissionReview{TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"}}
	var in admissionv1.AdmissionReview
	if err := admission.DecodeReview(body, &in); err != nil {
		failed(r.URL.Path, fmt.Sprintf("Could not decode body: %v", err))
		out.Response = admission.Deny(err)
	} else {
		out.TypeMeta = in.TypeMeta
		out.Response = wh.admit(in.Request, r.URL.Path)
		out.Response.UID = in.Request.UID
	}
	resp, err := json.Marshal(out)
	if err != nil {
		failed(r.URL.Path, fmt.Sprintf("Could not encode response: %v", err))
		http.Error(w, fmt.Sprintf("could not encode response: %v", err), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if _, err := w.Write(resp); err != nil {
		failed(r.URL.Path, fmt.Sprintf("could not write response: %v", err))
		return
	}
	metricSuccess.WithLabelValues().Inc()
}

// failed logs and counts a failure (Istio counts a denied pod as a failure
// and then, having answered, as a success too).
func failed(path, msg string) {
	scope.Errorf("%s: %s", path, msg)
	metricFailure.WithLabelValues().Inc()
}

// admit injects the request's pod.
func (wh *Webhook) admit(req *admissionv1.AdmissionRequest, path string) *admissionv1.AdmissionResponse {
	var pod corev1.Pod
	if err := json.Unmarshal(req.Object.Raw, &pod); err != nil {
		failed(path, fmt.Sprintf("Could not unmarshal raw object: %v", err))
		return admission.Deny(fmt.Errorf("could not decode the pod: %v", err))
	}
	// managed fields do not change the result and make patches costly
	pod.ManagedFields = nil
	if pod.Namespace == "" {
		pod.Namespace = req.Namespace
	}
	name := pod.Namespace + "/" + podName(&pod)
	cfg := wh.o.Config()
	if cfg == nil {
		failed(path, "pod "+name+": no injection config")
		return admission.Deny(errors.New("sidecar injection: istiod has no injection config (ConfigMap " +
			inject.ConfigMapName(wh.o.Revision) + " missing or invalid; see /debug/warningz)"))
	}
	if !inject.Required(cfg, &pod.Spec, &pod.ObjectMeta) {
		scope.Infof("pod %s: skipping due to policy check", name)
		metricSkip.WithLabelValues().Inc()
		return &admissionv1.AdmissionResponse{Allowed: true}
	}
	scope.Infof("pod %s: injecting", name)
	m := wh.o.Mesh()
	var pcs *inject.ProxyConfigs
	if wh.o.ProxyConfigs != nil {
		pcs = wh.o.ProxyConfigs()
	}
	patch, err := inject.Inject(inject.Request{
		Pod:              &pod,
		Config:           cfg,
		Mesh:             m,
		ProxyConfig:      inject.EffectiveProxyConfig(m, pcs, pod.Namespace, pod.Labels, pod.Annotations),
		Revision:         wh.o.Revision,
		NativeSidecar:    inject.DetectNativeSidecar(wh.o.NativeSidecars, wh.o.Nodes, pod.Spec.NodeName),
		ProxyEnvs:        ParseInjectPath(path),
		CompliancePolicy: wh.o.CompliancePolicy,
	})
	if err != nil {
		failed(path, fmt.Sprintf("Pod injection failed: %v", err))
		return admission.Deny(err)
	}
	pt := admissionv1.PatchTypeJSONPatch
	return &admissionv1.AdmissionResponse{Allowed: true, Patch: patch, PatchType: &pt}
}

func podName(p *corev1.Pod) string {
	if p.Name != "" {
		return p.Name
	}
	return p.GenerateName + "***** (actual name not yet known)"
}

// pathParams maps the webhook path's parameter names to proxy variables;
// other names become their upper-cased selves.
var pathParams = map[string]string{
	"cluster": "ISTIO_META_CLUSTER_ID",
	"net":     "ISTIO_META_NETWORK",
}

// ParseInjectPath reads the proxy variables of a webhook path:
// /inject/k1/v1/k2/v2 (a "/" in a value written --slash--), or the older
// /inject/:ENV:K1=v1:ENV:K2=v2. A trailing key without value is ignored.
func ParseInjectPath(path string) map[string]string {
	path = strings.TrimSuffix(path, "/")
	parts := strings.SplitN(path, "/", 3)
	var kv []string
	if len(parts) == 3 {
		if strings.HasPrefix(parts[2], ":ENV:") {
			for _, pair := range strings.Split(parts[2], ":ENV:")[1:] {
				k, v, ok := strings.Cut(pair, "=")
				if k != "" && ok {
					kv = append(kv, k, v)
				}
			}
		} else {
			kv = strings.Split(parts[2], "/")
			for i := 1; i < len(kv); i += 2 {
				kv[i] = strings.ReplaceAll(kv[i], "--slash--", "/")
			}
		}
	}
	out := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		env, ok := pathParams[kv[i]]
		if !ok {
			env = strings.ToUpper(kv[i])
		}
		if env != "" {
			out[env] = kv[i+1]
		}
	}
	if len(kv)%2 == 1 {
		scope.Warnf("inject path %s: odd number of entries, the last key %q is ignored", path, kv[len(kv)-1])
	}
	return out
}
