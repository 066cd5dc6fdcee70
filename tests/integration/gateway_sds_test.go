package integration

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"strings"
	"testing"
	"time"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	networking "istio.io/api/networking/v1alpha3"
	clientnetworking "istio.io/client-go/pkg/apis/networking/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/meshplane/istiod/pilot/pkg/xds"
	"github.com/meshplane/istiod/pilot/pkg/xds/adsc"
	"github.com/meshplane/istiod/tests/kube"
)

// certPEM returns a fresh self-signed certificate and its key, in PEM.
func certPEM(t *testing.T, cn string) (cert, key []byte) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn},
		DNSNames: []string{cn}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
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

// sniOf lists the SNI names of a held listener's filter chains ("" when
// the listener is not held).
func sniOf(c *adsc.Client, name string) string {
	l, _ := c.Resource(xds.ListenerType, name).(*listenerv3.Listener)
	var out []string
	for _, fc := range l.GetFilterChains() {
		out = append(out, fc.GetFilterChainMatch().GetServerNames()...)
	}
	return strings.Join(out, ",")
}

// An ingress gateway, dialed over TLS with its real service-account token,
// gets its HTTPS server only once the credentialName Secret exists in the
// API server; it reads the certificate over SDS, sees it change when the
// Secret changes, and loses the server (not the listener) when the Secret
// turns to garbage — warned about on warningz all along.
func TestGatewayCertificateFromTheAPIServer(t *testing.T) {
	env := kube.Shared(t)
	ns := env.NewNamespace(t, nil).Name
	app := env.NewNamespace(t, nil).Name
	d := startIstiod(t, env, ns)
	roots, _ := publishedRoot(t, env, app)
	token := serviceAccountToken(t, env, app, "ingress")

	gw := &clientnetworking.Gateway{
		ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: app},
		Spec: networking.Gateway{Selector: map[string]string{"app": "ingress"}, Servers: []*networking.Server{
			{Port: &networking.Port{Number: 8080, Name: "http", Protocol: "HTTP"}, Hosts: []string{"plain.example.com"}},
			{Port: &networking.Port{Number: 8443, Name: "https", Protocol: "HTTPS"}, Hosts: []string{"shop.example.com"},
				Tls: &networking.ServerTLSSettings{Mode: networking.ServerTLSSettings_SIMPLE, CredentialName: "shop-cert"}},
			{Port: &networking.Port{Number: 8443, Name: "https-extra", Protocol: "HTTPS"}, Hosts: []string{"extra.example.com"},
				Tls: &networking.ServerTLSSettings{Mode: networking.ServerTLSSettings_SIMPLE, CredentialName: "extra-cert"}},
		}},
	}
	if _, err := env.Istio.NetworkingV1().Gateways(app).Create(registryCtx, gw, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	route := &clientnetworking.VirtualService{
		ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: app},
		Spec: networking.VirtualService{Hosts: []string{"*.example.com"}, Gateways: []string{"shop"},
			Http: []*networking.HTTPRoute{{Route: []*networking.HTTPRouteDestination{{Destination: &networking.Destination{Host: "web." + app + ".svc.cluster.local"}}}}}},
	}
	if _, err := env.Istio.NetworkingV1().VirtualServices(app).Create(registryCtx, route, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "Gateway and VirtualService in configz", func() (bool, string) {
		return d.find("Gateway", app, "shop") != nil && d.find("VirtualService", app, "shop") != nil, ""
	})

	node := "router~10.205.0.1~ingress-abc." + app + "~" + app + ".svc.cluster.local"
	md := map[string]any{"NAMESPACE": app, "SERVICE_ACCOUNT": "ingress", "LABELS": map[string]any{"app": "ingress"}}
	c := dialSecureADS(t, d.srv.SecureGRPCAddr(), roots, ns, token, node, md)
	if err := c.Watch(xds.ListenerType); err != nil {
		t.Fatal(err)
	}
	a := &adsClient{t: t, c: c}
	a.await("the HTTP listener, no HTTPS one while no Secret exists", func() (bool, string) {
		return c.Resource(xds.ListenerType, "0.0.0.0_8080") != nil && c.Resource(xds.ListenerType, "0.0.0.0_8443") == nil,
			strings.Join(c.State(xds.ListenerType), " ")
	})
	missing := func(name string) func() (bool, string) {
		return func() (bool, string) {
			var all []string
			for _, p := range d.warnings() {
				all = append(all, p.Message)
				if p.Source == "gateway" && strings.Contains(p.Message, name) {
					return true, ""
				}
			}
			return false, strings.Join(all, "\n")
		}
	}
	eventually(t, "warningz names the missing shop-cert", missing("shop-cert"))

	cert, key := certPEM(t, "shop.example.com")
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "shop-cert", Namespace: app}, Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{"tls.crt": cert, "tls.key": key}}
	if _, err := env.Kube.CoreV1().Secrets(app).Create(registryCtx, secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	a.await("the HTTPS server once its Secret exists (extra-cert still missing)", func() (bool, string) {
		s := sniOf(c, "0.0.0.0_8443")
		return s == "shop.example.com", s
	})
	if err := c.Watch(xds.SecretType, "kubernetes://shop-cert"); err != nil {
		t.Fatal(err)
	}
	served := func() string {
		s, _ := c.Resource(xds.SecretType, "kubernetes://shop-cert").(*tlsv3.Secret)
		return string(s.GetTlsCertificate().GetCertificateChain().GetInlineBytes())
	}
	a.await("the certificate over SDS", func() (bool, string) { return served() == string(cert), served() })

	cert2, key2 := certPEM(t, "shop.example.com")
	secret.Data = map[string][]byte{"tls.crt": cert2, "tls.key": key2}
	if _, err := env.Kube.CoreV1().Secrets(app).Update(registryCtx, secret, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	a.await("the renewed certificate over SDS", func() (bool, string) { return served() == string(cert2), served() })

	// a Secret of another namespace with the same name changes nothing
	other := env.NewNamespace(t, nil).Name
	if _, err := env.Kube.CoreV1().Secrets(other).Create(registryCtx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "extra-cert", Namespace: other},
		Type: corev1.SecretTypeTLS, Data: map[string][]byte{"tls.crt": cert, "tls.key": key}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second) // a push it might wrongly cause has had time to arrive
	a.drain()
	if s := sniOf(c, "0.0.0.0_8443"); s != "shop.example.com" {
		t.Errorf("another namespace's extra-cert changed 8443 to %q", s)
	}

	secret.Data = map[string][]byte{"tls.crt": []byte("garbage"), "tls.key": key2}
	if _, err := env.Kube.CoreV1().Secrets(app).Update(registryCtx, secret, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	a.await("the server left out once its Secret is garbage; the listener's HTTP port stays", func() (bool, string) {
		return c.Resource(xds.ListenerType, "0.0.0.0_8443") == nil && c.Resource(xds.ListenerType, "0.0.0.0_8080") != nil,
			strings.Join(c.State(xds.ListenerType), " ")
	})
	eventually(t, "warningz names the broken shop-cert", missing("shop-cert"))
	if s := sniOf(c, "0.0.0.0_8443"); s != "" {
		t.Errorf("8443 still serves %s", s)
	}
}
