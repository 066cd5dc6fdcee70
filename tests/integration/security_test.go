package integration

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"
	securityapi "istio.io/api/security/v1alpha1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/meshplane/istiod/pilot/pkg/xds"
	"github.com/meshplane/istiod/pilot/pkg/xds/adsc"
	"github.com/meshplane/istiod/pkg/kube/leaderelection"
	"github.com/meshplane/istiod/tests/kube"
)

// serviceAccountToken creates a service account and a token for it from the
// TokenRequest API (what kubelet projects into a pod), audience istio-ca.
func serviceAccountToken(t *testing.T, env *kube.Env, ns, sa string) string {
	t.Helper()
	_, err := env.Kube.CoreV1().ServiceAccounts(ns).Create(registryCtx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}}, metav1.CreateOptions{})
	if err != nil && !strings.Contains(err.Error(), "already exists") {
		t.Fatal(err)
	}
	exp := int64(600)
	tr, err := env.Kube.CoreV1().ServiceAccounts(ns).CreateToken(registryCtx, sa, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{Audiences: []string{"istio-ca"}, ExpirationSeconds: &exp}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return tr.Status.Token
}

// publishedRoot waits for istio-ca-root-cert in ns and returns its pool.
func publishedRoot(t *testing.T, env *kube.Env, ns string) (*x509.CertPool, string) {
	t.Helper()
	var pemRoot string
	eventually(t, "istio-ca-root-cert in "+ns, func() (bool, string) {
		cm, err := env.Kube.CoreV1().ConfigMaps(ns).Get(registryCtx, "istio-ca-root-cert", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		pemRoot = cm.Data["root-cert.pem"]
		return pemRoot != "" && cm.Labels["istio.io/config"] == "true", fmt.Sprint(cm.Data, cm.Labels)
	})
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM([]byte(pemRoot)) {
		t.Fatalf("istio-ca-root-cert holds no certificate: %q", pemRoot)
	}
	return pool, pemRoot
}

type bearer struct{ token string }

func (b bearer) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	if b.token == "" {
		return nil, nil
	}
	return map[string]string{"authorization": "Bearer " + b.token}, nil
}
func (bearer) RequireTransportSecurity() bool { return true }

// tlsDial opts verify istiod as the agent does: against the published root,
// with the name istiod.<istiod namespace>.svc (the certificate has no IP SAN).
func tlsDial(roots *x509.CertPool, istiodNS, token string) []grpc.DialOption {
	return []grpc.DialOption{
		grpc.WithTransportCredentials(credentials.NewTLS(&tls.Config{RootCAs: roots, ServerName: "istiod." + istiodNS + ".svc", MinVersion: tls.VersionTLS12})),
		grpc.WithPerRPCCredentials(bearer{token}),
	}
}

func newCSR(t *testing.T) []byte {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{}, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
}

// The CA and ADS over TLS, against a real API server: tokens from the
// TokenRequest API reviewed for real, the root published in every
// namespace, Istio's codes for every refusal.
func TestCAAndSecureXDSWithRealTokens(t *testing.T) {
	env := kube.Shared(t)
	ns := env.NewNamespace(t, nil).Name // istiod's namespace
	app := env.NewNamespace(t, nil).Name
	other := env.NewNamespace(t, nil).Name
	d := startIstiod(t, env, ns)
	roots, rootPEM := publishedRoot(t, env, app)
	if _, otherRoot := publishedRoot(t, env, other); otherRoot != rootPEM {
		t.Fatal("two namespaces got different roots")
	}
	productpage := serviceAccountToken(t, env, app, "bookinfo-productpage")
	intruder := serviceAccountToken(t, env, other, "intruder")
	addr := d.srv.SecureGRPCAddr()

	sign := func(token string, csr []byte, ttl int64) (*securityapi.IstioCertificateResponse, error) {
		conn, err := grpc.NewClient(addr, tlsDial(roots, ns, token)...)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		return securityapi.NewIstioCertificateServiceClient(conn).CreateCertificate(ctx,
			&securityapi.IstioCertificateRequest{Csr: string(csr), ValidityDuration: ttl})
	}
	resp, err := sign(productpage, newCSR(t), 3600)
	if err != nil {
		t.Fatal(err)
	}
	chain := resp.GetCertChain()
	if len(chain) != 2 || strings.TrimSpace(chain[1]) != strings.TrimSpace(rootPEM) {
		t.Fatalf("chain of %d, root last: %v", len(chain), len(chain) == 2 && chain[1] == rootPEM)
	}
	block, _ := pem.Decode([]byte(chain[0]))
	leaf, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	want := "spiffe://cluster.local/ns/" + app + "/sa/bookinfo-productpage"
	if len(leaf.URIs) != 1 || leaf.URIs[0].String() != want {
		t.Errorf("leaf SANs %v, want %s", leaf.URIs, want)
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("leaf does not chain to the published root: %v", err)
	}

	// refusals, each with its code; the CA keeps serving the others
	big := make([]byte, 5<<20)
	for _, c := range []struct {
		name  string
		token string
		csr   []byte
		code  codes.Code
	}{
		{"no token", "", newCSR(t), codes.Unauthenticated},
		{"garbage CSR", productpage, []byte("-----BEGIN CERTIFICATE REQUEST-----\nbm9wZQ==\n-----END CERTIFICATE REQUEST-----\n"), codes.InvalidArgument},
		{"oversized request", productpage, big, codes.ResourceExhausted},
		{"a token that is not a token", "not-a-jwt", newCSR(t), codes.Unauthenticated},
	} {
		if _, err := sign(c.token, c.csr, 3600); status.Code(err) != c.code {
			t.Errorf("%s: %v, want %v", c.name, err, c.code)
		}
	}
	// a CSR for an identity the caller does not own gets the caller's
	resp, err = sign(intruder, newCSR(t), 3600)
	if err != nil {
		t.Fatal(err)
	}
	block, _ = pem.Decode([]byte(resp.CertChain[0]))
	if leaf, _ = x509.ParseCertificate(block.Bytes); leaf == nil || leaf.URIs[0].String() != "spiffe://cluster.local/ns/"+other+"/sa/intruder" {
		t.Errorf("intruder got %v", leaf)
	}
	// a revoked token (its service account deleted) is refused
	if err := env.Kube.CoreV1().ServiceAccounts(other).Delete(registryCtx, "intruder", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "deleted account's token refused", func() (bool, string) {
		_, err := sign(intruder, newCSR(t), 3600)
		return status.Code(err) == codes.Unauthenticated, fmt.Sprint(err)
	})

	// ADS over TLS with the workload's token: its own node is served,
	// another namespace's node is refused
	node := "sidecar~10.204.0.1~productpage-v1." + app + "~" + app + ".svc.cluster.local"
	a := dialSecureADS(t, addr, roots, ns, productpage, node, map[string]any{"NAMESPACE": app, "SERVICE_ACCOUNT": "bookinfo-productpage"})
	if err := a.Watch(xds.ClusterType); err != nil {
		t.Fatal(err)
	}
	if r, err := a.Next(30 * time.Second); err != nil || len(r.Resources) == 0 {
		t.Fatalf("CDS over TLS: %v %v", r, err)
	}
	b := dialSecureADS(t, addr, roots, ns, productpage, "sidecar~10.204.0.2~x."+other+"~"+other+".svc.cluster.local", map[string]any{"NAMESPACE": other})
	_ = b.Watch(xds.ClusterType)
	if _, err := b.Next(30 * time.Second); status.Code(err) != codes.PermissionDenied {
		t.Errorf("node of another namespace: %v, want PermissionDenied", err)
	}
}

func dialSecureADS(t *testing.T, addr string, roots *x509.CertPool, istiodNS, token, node string, md map[string]any) *adsc.Client {
	t.Helper()
	c, err := adsc.Dial(context.Background(), addr, adsc.Config{NodeID: node, Metadata: md, DialOptions: tlsDial(roots, istiodNS, token)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// Two replicas on one API server share one root (the istio-ca-secret one
// of them created) and one ConfigMap writer: the Lease holder. When it
// stops, the other takes over and repairs what changed meanwhile.
func TestTwoReplicasShareRootAndWriter(t *testing.T) {
	env := kube.Shared(t)
	ns := env.NewNamespace(t, nil).Name
	app := env.NewNamespace(t, nil).Name
	first := startIstiod(t, env, ns)
	second := startIstiod(t, env, ns)
	if a, b := string(first.srv.CA().RootCertPEM()), string(second.srv.CA().RootCertPEM()); a != b {
		t.Fatal("the replicas minted two roots")
	}
	secret, err := env.Kube.CoreV1().Secrets(ns).Get(registryCtx, "istio-ca-secret", metav1.GetOptions{})
	if err != nil || secret.Type != "istio.io/ca-root" || string(secret.Data["root-cert.pem"]) != string(first.srv.CA().RootCertPEM()) {
		t.Fatalf("istio-ca-secret: %v %v", err, secret)
	}
	_, rootPEM := publishedRoot(t, env, app)
	if rootPEM != string(first.srv.CA().RootCertPEM()) {
		t.Fatal("the published root is not the CA's")
	}
	holder := electionHolder(t, env, ns)
	if holder == "" {
		t.Fatal("no holder of istio-namespace-controller-election")
	}
	leader, follower := first, second
	if second.srv.IsNamespaceControllerLeader() {
		leader, follower = second, first
	}
	if leader.srv.IsNamespaceControllerLeader() == follower.srv.IsNamespaceControllerLeader() {
		t.Fatal("not exactly one leader")
	}
	leader.stop()
	if err := env.Kube.CoreV1().ConfigMaps(app).Delete(registryCtx, "istio-ca-root-cert", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, again := publishedRoot(t, env, app); again != rootPEM {
		t.Fatal("the new leader wrote another root")
	}
	if !follower.srv.IsNamespaceControllerLeader() {
		t.Error("the remaining replica does not lead")
	}
	if now := electionHolder(t, env, ns); now == "" || now == holder {
		t.Errorf("the election is still held by %s (now %q)", holder, now)
	}
}

// electionHolder is the holder of the namespace controller's election in
// ns: Istio's ConfigMap lock, its record in the leader annotation.
func electionHolder(t *testing.T, env *kube.Env, ns string) string {
	t.Helper()
	cm, err := env.Kube.CoreV1().ConfigMaps(ns).Get(registryCtx, leaderelection.NamespaceController, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the election's ConfigMap: %v", err)
	}
	var rec leaderelection.Record
	if err := json.Unmarshal([]byte(cm.Annotations[leaderelection.RecordAnnotation]), &rec); err != nil {
		t.Fatalf("the election record %q: %v", cm.Annotations[leaderelection.RecordAnnotation], err)
	}
	if rec.HolderKey != "default" {
		t.Errorf("holder key %q, want default (a local istiod of the default revision)", rec.HolderKey)
	}
	return rec.HolderIdentity
}

// Debug endpoints off loopback take the same service-account tokens as
// xDS: istiod's namespace sees everything, another namespace only its own
// proxies' config dumps, no token nothing. (The request is served
// in-process with a non-loopback peer address; nothing leaves the host.)
func TestDebugEndpointsAuthenticateWithRealTokens(t *testing.T) {
	env := kube.Shared(t)
	ns := env.NewNamespace(t, nil).Name
	app := env.NewNamespace(t, nil).Name
	d := startIstiod(t, env, ns)
	system := serviceAccountToken(t, env, ns, "default")
	workload := serviceAccountToken(t, env, app, "default")
	for _, c := range []struct {
		token, path string
		want        int
	}{
		{"", "/debug/configz", 401},
		{"not-a-token", "/debug/configz", 401},
		{system, "/debug/configz", 200},
		{workload, "/debug/configz", 403},
	} {
		req := httptest.NewRequest("GET", c.path, nil)
		req.RemoteAddr = "10.255.0.1:40000"
		if c.token != "" {
			req.Header.Set("Authorization", "Bearer "+c.token)
		}
		rec := httptest.NewRecorder()
		d.srv.HTTPHandler().ServeHTTP(rec, req)
		if rec.Code != c.want {
			t.Errorf("%s with token %.10q: %d, want %d (%s)", c.path, c.token, rec.Code, c.want, rec.Body.String())
		}
	}
}
