package integration

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"
	securityapi "istio.io/api/security/v1alpha1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/meshplane/istiod/pilot/pkg/bootstrap"
	"github.com/meshplane/istiod/tests/kube"
)

// ztunnel, with a token bound to its pod as kubelet projects it, asks the
// CA for the certificates of the workloads of its node
// (ImpersonatedIdentity), as Istio's CA allows it with
// CA_TRUSTED_NODE_ACCOUNTS: a workload of its node gets its certificate,
// one of another node is refused, and so is a caller that is not trusted.
func TestZtunnelImpersonatesTheWorkloadsOfItsNode(t *testing.T) {
	env := kube.Shared(t)
	sys := env.NewNamespace(t, nil).Name
	app := env.NewNamespace(t, nil).Name
	ctx := context.Background()
	podOn := func(ns, name, sa, node string) *corev1.Pod {
		t.Helper()
		if _, err := env.Kube.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}},
			metav1.CreateOptions{}); err != nil && !strings.Contains(err.Error(), "already exists") {
			t.Fatal(err)
		}
		p, err := env.Kube.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: corev1.PodSpec{ServiceAccountName: sa, NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "c"}}}},
			metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	ztunnel := podOn(sys, "ztunnel-abcde", "ztunnel", "node-1")
	podOn(app, "cart-1", "cart", "node-1")
	podOn(app, "stock-1", "stock", "node-2")
	boundToken := func(p *corev1.Pod) string {
		t.Helper()
		exp := int64(600)
		tr, err := env.Kube.CoreV1().ServiceAccounts(p.Namespace).CreateToken(ctx, p.Spec.ServiceAccountName, &authenticationv1.TokenRequest{
			Spec: authenticationv1.TokenRequestSpec{Audiences: []string{"istio-ca"}, ExpirationSeconds: &exp,
				BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: p.Name, UID: p.UID}}},
			metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return tr.Status.Token
	}

	d := startIstiod(t, env, sys, func(a *bootstrap.PilotArgs) { a.Security.TrustedNodeAccounts = sys + "/ztunnel" })
	roots, _ := publishedRoot(t, env, app)
	sign := func(token, identity string) (*securityapi.IstioCertificateResponse, error) {
		conn, err := grpc.NewClient(d.srv.SecureGRPCAddr(), tlsDial(roots, sys, token)...)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		return securityapi.NewIstioCertificateServiceClient(conn).CreateCertificate(ctx, &securityapi.IstioCertificateRequest{
			Csr: string(newCSR(t)), ValidityDuration: 3600,
			Metadata: &structpb.Struct{Fields: map[string]*structpb.Value{"ImpersonatedIdentity": structpb.NewStringValue(identity)}}})
	}
	cart := "spiffe://cluster.local/ns/" + app + "/sa/cart"
	zt := boundToken(ztunnel)
	var resp *securityapi.IstioCertificateResponse
	eventually(t, "the certificate of a workload of ztunnel's node", func() (bool, string) {
		var err error
		resp, err = sign(zt, cart) // the CA's pod index may still be syncing
		return err == nil, "refused: " + status.Convert(err).Message()
	})
	block, _ := pem.Decode([]byte(resp.GetCertChain()[0]))
	leaf, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if len(leaf.URIs) != 1 || leaf.URIs[0].String() != cart {
		t.Fatalf("leaf SANs %v, want %s", leaf.URIs, cart)
	}
	for name, c := range map[string]struct{ token, identity string }{
		"a workload of another node": {zt, "spiffe://cluster.local/ns/" + app + "/sa/stock"},
		"a caller not trusted":       {serviceAccountToken(t, env, app, "cart"), cart},
		"not an identity":            {zt, "cart"},
	} {
		_, err := sign(c.token, c.identity)
		if status.Code(err) != codes.Unauthenticated || status.Convert(err).Message() != "request impersonation authentication failure" {
			t.Errorf("%s: %v, want Unauthenticated: request impersonation authentication failure", name, err)
		}
	}
}
