package generators_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/meshplane/istiod/pilot/pkg/credentials"
	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pilot/pkg/xds"
	"github.com/meshplane/istiod/pilot/pkg/xds/adsc"
	"github.com/meshplane/istiod/pilot/pkg/xds/generators"
	"github.com/meshplane/istiod/pilot/pkg/xds/xdstest"
)

const sdsMesh = `
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: web, namespace: shop}
spec:
  hosts: [web.shop.svc.cluster.local]
  ports: [{number: 8080, name: http, protocol: HTTP}]
  resolution: STATIC
  endpoints: [{address: 10.244.1.10}]
---
apiVersion: networking.istio.io/v1
kind: Gateway
metadata: {name: gw, namespace: shop}
spec:
  selector: {app: shop-gateway}
  servers:
  - port: {number: 443, name: https, protocol: HTTPS}
    hosts: [good.example.com]
    tls: {mode: SIMPLE, credentialName: good}
  - port: {number: 443, name: https-missing, protocol: HTTPS}
    hosts: [missing.example.com]
    tls: {mode: SIMPLE, credentialName: missing}
  - port: {number: 443, name: https-broken, protocol: HTTPS}
    hosts: [broken.example.com]
    tls: {mode: SIMPLE, credentialName: broken}
  - port: {number: 8443, name: mtls, protocol: HTTPS}
    hosts: [mtls.example.com]
    tls: {mode: MUTUAL, credentialName: good}
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: web, namespace: shop}
spec:
  hosts: ["*.example.com"]
  gateways: [gw]
  http:
  - route: [{destination: {host: web.shop.svc.cluster.local}}]
`

// dialTLS connects a proxy to the server's TLS port with the identity of
// token (namespace/serviceaccount).
func dialTLS(t *testing.T, s *xdstest.TLSServer, node string, md map[string]any, token string) *adsc.Client {
	t.Helper()
	c, err := adsc.Dial(t.Context(), s.TLSAddr, adsc.Config{NodeID: node, Metadata: md, DialOptions: s.DialOptions(token)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// selfSignedPEM returns a certificate and key in PEM.
func selfSignedPEM(t *testing.T) (cert, key []byte) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "good.example.com"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb})
}

// A gateway reads the certificates its servers name over SDS, only over
// TLS as a workload of the Gateway's namespace; a server whose Secret is
// missing or not a certificate is left out of the listener (Istio keeps
// it, and Envoy then holds the whole listener back waiting for it), and
// says so on warningz.
func TestGatewayCertificatesOverSDS(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mesh.yaml")
	if err := os.WriteFile(path, []byte(sdsMesh), 0o600); err != nil {
		t.Fatal(err)
	}
	env, idx, disc := envFromFile(t, path, nil)
	cert, key := selfSignedPEM(t)
	secrets := credentials.Map{
		"shop/good": {ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "good"}, Type: corev1.SecretTypeTLS,
			Data: map[string][]byte{"tls.crt": cert, "tls.key": key, "ca.crt": cert}},
		"shop/broken": {ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "broken"},
			Data: map[string][]byte{"cert": []byte("not a certificate"), "key": key}},
		"other/good": {ObjectMeta: metav1.ObjectMeta{Namespace: "other", Name: "good"},
			Data: map[string][]byte{"cert": cert, "key": key}},
	}
	s := xdstest.NewTLSServer(t)
	s.DS.SetAuthenticator(xdstest.TokenIdentity)
	gens := &generators.SidecarGenerators{Endpoints: idx, Discovery: disc, Credentials: secrets}
	gens.Register(s.DS)
	gens.RegisterSDS(s.DS)
	s.DS.InitPushContext(env)

	node := "router~10.244.9.5~shop-gw-abc.shop~shop.svc.cluster.local"
	md := map[string]any{"NAMESPACE": "shop", "LABELS": map[string]any{"app": "shop-gateway"}}
	dial := func(node string, md map[string]any, token string) *adsc.Client { return dialTLS(t, s, node, md, token) }
	c := dial(node, md, "shop/shop-gw")
	if err := c.Watch(xds.ListenerType); err != nil {
		t.Fatal(err)
	}
	xdstest.Next(t, c)
	var sni []string
	for _, fc := range c.Resource(xds.ListenerType, "0.0.0.0_443").(*listenerv3.Listener).GetFilterChains() {
		sni = append(sni, fc.GetFilterChainMatch().GetServerNames()...)
	}
	if strings.Join(sni, ",") != "good.example.com" {
		t.Errorf("443 chains serve %v, want only good.example.com (missing and broken left out)", sni)
	}
	if c.Resource(xds.ListenerType, "0.0.0.0_8443") == nil {
		t.Error("the MUTUAL server (CA from ca.crt of the same Secret) is missing")
	}

	want := []string{"kubernetes://good", "kubernetes://good-cacert", "kubernetes://missing", "kubernetes://other/good"}
	if err := c.Watch(xds.SecretType, want...); err != nil {
		t.Fatal(err)
	}
	xdstest.Next(t, c)
	got := c.State(xds.SecretType)
	if strings.Join(got, ",") != "kubernetes://good,kubernetes://good-cacert" {
		t.Fatalf("secrets served %v, want good and its CA only (missing does not exist, other/ is not the gateway's namespace)", got)
	}
	tc := c.Resource(xds.SecretType, "kubernetes://good").(*tlsv3.Secret).GetTlsCertificate()
	if string(tc.GetCertificateChain().GetInlineBytes()) != string(cert) || string(tc.GetPrivateKey().GetInlineBytes()) != string(key) {
		t.Error("kubernetes://good does not carry the Secret's certificate and key")
	}
	if ca := c.Resource(xds.SecretType, "kubernetes://good-cacert").(*tlsv3.Secret).GetValidationContext(); string(ca.GetTrustedCa().GetInlineBytes()) != string(cert) {
		t.Error("kubernetes://good-cacert does not carry ca.crt")
	}

	// a gateway of another namespace with the same labels gets the Gateway
	// (it selects by labels, as in Istio) but not its certificates
	intruder := dial("router~10.244.9.6~gw-abc.elsewhere~elsewhere.svc.cluster.local",
		map[string]any{"NAMESPACE": "elsewhere", "LABELS": map[string]any{"app": "shop-gateway"}}, "elsewhere/gw")
	if err := intruder.Watch(xds.SecretType, "kubernetes://good"); err != nil {
		t.Fatal(err)
	}
	xdstest.Next(t, intruder)
	if got := intruder.State(xds.SecretType); len(got) != 0 {
		t.Errorf("a workload of another namespace got %v", got)
	}

	var msgs []string
	for _, p := range gens.GatewayProblems(s.DS)() {
		msgs = append(msgs, p.Message)
	}
	joined := strings.Join(msgs, "\n")
	for _, w := range []string{"https-missing (port 443) left out: secret not found: shop/missing",
		"https-broken (port 443) left out: secret shop/broken: the certificate and key are not a valid PEM pair"} {
		if !strings.Contains(joined, w) {
			t.Errorf("warningz lacks %q; has:\n%s", w, joined)
		}
	}
	// the same on /debug/push_status, under the proxy that left them out
	status := s.DS.PushContext().ProxyStatus()[model.MetricGatewayServerRejected]
	n := 0
	for _, st := range status {
		if st.Proxy == "shop-gw-abc.shop" && strings.Contains(st.Message, "left out: secret") {
			n++
		}
	}
	if n != 2 {
		t.Errorf("push status has %d certificate problems of shop-gw-abc.shop, want 2: %v", n, status)
	}
}
