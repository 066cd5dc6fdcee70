package generators_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/meshplane/istiod/pilot/pkg/credentials"
	"github.com/meshplane/istiod/pilot/pkg/xds"
	"github.com/meshplane/istiod/pilot/pkg/xds/generators"
	"github.com/meshplane/istiod/pilot/pkg/xds/xdstest"
)

const originationMesh = `
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: api, namespace: shop}
spec:
  hosts: [api.example.com]
  ports: [{number: 443, name: tls, protocol: TLS}]
  resolution: DNS
  location: MESH_EXTERNAL
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: api, namespace: shop}
spec:
  host: api.example.com
  workloadSelector: {matchLabels: {app: client}}
  trafficPolicy:
    tls: {mode: MUTUAL, credentialName: client-cert}
`

// A sidecar (or an egress gateway) whose DestinationRule originates TLS
// with a credentialName reads that Secret (and its CA) from istiod over
// SDS, only over TLS, only from its own namespace, and nothing else: a
// Secret no rule names stays out, and a workload of another namespace gets
// none.
func TestSidecarOriginationCredentialsOverSDS(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mesh.yaml")
	if err := os.WriteFile(path, []byte(originationMesh), 0o600); err != nil {
		t.Fatal(err)
	}
	env, idx, disc := envFromFile(t, path, nil)
	cert, key := selfSignedPEM(t)
	secret := func(ns, name string) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Type: corev1.SecretTypeTLS,
			Data: map[string][]byte{"tls.crt": cert, "tls.key": key, "ca.crt": cert}}
	}
	s := xdstest.NewTLSServer(t)
	s.DS.SetAuthenticator(xdstest.TokenIdentity)
	gens := &generators.SidecarGenerators{Endpoints: idx, Discovery: disc,
		Credentials: credentials.Map{"shop/client-cert": secret("shop", "client-cert"), "shop/unnamed": secret("shop", "unnamed"),
			"other/client-cert": secret("other", "client-cert")}}
	gens.Register(s.DS)
	gens.RegisterSDS(s.DS)
	s.DS.InitPushContext(env)

	c := dialTLS(t, s, "sidecar~10.244.3.5~client-abc.shop~shop.svc.cluster.local",
		map[string]any{"NAMESPACE": "shop", "LABELS": map[string]any{"app": "client"}}, "shop/client")
	if err := c.Watch(xds.SecretType, "kubernetes://client-cert", "kubernetes://client-cert-cacert", "kubernetes://unnamed", "kubernetes://other/client-cert"); err != nil {
		t.Fatal(err)
	}
	xdstest.Next(t, c)
	if got := strings.Join(c.State(xds.SecretType), ","); got != "kubernetes://client-cert,kubernetes://client-cert-cacert" {
		t.Fatalf("secrets served %s, want the rule's credential and its CA only", got)
	}
	tc := c.Resource(xds.SecretType, "kubernetes://client-cert").(*tlsv3.Secret).GetTlsCertificate()
	if string(tc.GetCertificateChain().GetInlineBytes()) != string(cert) {
		t.Error("kubernetes://client-cert does not carry the Secret's certificate")
	}

	// an egress gateway of the namespace reads it too (no Gateway names it)
	gw := dialTLS(t, s, "router~10.244.3.7~egress-abc.shop~shop.svc.cluster.local",
		map[string]any{"NAMESPACE": "shop", "LABELS": map[string]any{"istio": "egressgateway"}}, "shop/egress")
	if err := gw.Watch(xds.SecretType, "kubernetes://client-cert", "kubernetes://unnamed"); err != nil {
		t.Fatal(err)
	}
	xdstest.Next(t, gw)
	if got := strings.Join(gw.State(xds.SecretType), ","); got != "kubernetes://client-cert" {
		t.Errorf("the egress gateway got %s, want the rule's credential only", got)
	}

	// the same request from a workload of another namespace
	intruder := dialTLS(t, s, "sidecar~10.244.3.6~x-abc.other~other.svc.cluster.local",
		map[string]any{"NAMESPACE": "other", "LABELS": map[string]any{"app": "client"}}, "other/x")
	if err := intruder.Watch(xds.SecretType, "kubernetes://client-cert", "kubernetes://shop/client-cert"); err != nil {
		t.Fatal(err)
	}
	xdstest.Next(t, intruder)
	if got := intruder.State(xds.SecretType); len(got) != 0 {
		t.Errorf("a workload of another namespace got %v", got)
	}
}
