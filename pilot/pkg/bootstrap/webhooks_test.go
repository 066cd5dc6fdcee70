package bootstrap_test

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/meshplane/istiod/pilot/pkg/bootstrap"
)

// As Istio's istiod, the webhooks are served on --httpsAddr with istiod's
// serving certificate whether or not the TLS gRPC port is on: with
// --secureGRPCAddr empty there is no TLS gRPC port, yet a validation
// request over TLS, verified against istiod's root for istiod's service
// name, is answered.
func TestWebhooksServedWithoutSecureGRPC(t *testing.T) {
	args := newFileServerArgs(t, filepath.Join(t.TempDir(), "ca"))
	args.SecureGRPCAddr = ""
	args.ShutdownDuration = 5 * time.Second
	srv, err := bootstrap.NewServer(args)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown()
	if a := srv.SecureGRPCAddr(); a != "" {
		t.Errorf("a TLS gRPC port on %s with --secureGRPCAddr empty", a)
	}
	addr := srv.HTTPSAddr()
	if addr == "" || srv.CA() == nil {
		t.Fatalf("no webhook server (%q) or no CA (%v) with --secureGRPCAddr empty", addr, srv.CA() != nil)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(srv.CA().RootCertPEM()) {
		t.Fatal("no root certificate")
	}
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: roots, ServerName: "istiod.istio-system.svc"}}}

	review := admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{UID: "1", Operation: admissionv1.Create,
			Kind:     metav1.GroupVersionKind{Group: "networking.istio.io", Version: "v1", Kind: "Gateway"},
			Resource: metav1.GroupVersionResource{Group: "networking.istio.io", Version: "v1", Resource: "gateways"},
			Object: runtime.RawExtension{Raw: []byte(`{"apiVersion":"networking.istio.io/v1","kind":"Gateway",` +
				`"metadata":{"name":"invalid-gateway","namespace":"istio-system"},"spec":{}}`)}},
	}
	body, err := json.Marshal(review)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := client.Post("https://"+addr+"/validate", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var got admissionv1.AdmissionReview
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil || resp.StatusCode != http.StatusOK || got.Response == nil {
		t.Fatalf("/validate: %d %v %+v", resp.StatusCode, err, got)
	}
	if got.Response.UID != "1" || got.Response.Allowed {
		t.Errorf("an invalid Gateway: uid %q allowed %v (%v)", got.Response.UID, got.Response.Allowed, got.Response.Result)
	}
}
