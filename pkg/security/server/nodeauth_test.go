package server_test

import (
	"context"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/structpb"
	pb "istio.io/api/security/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/meshplane/istiod/pkg/log/logtest"
	"github.com/meshplane/istiod/pkg/security"
	"github.com/meshplane/istiod/pkg/security/server"
)

// ztunnelAuth is a caller authenticated by a token bound to the ztunnel
// pod of node-1.
type ztunnelAuth struct{ info security.KubernetesInfo }

func (z ztunnelAuth) Authenticate(context.Context) (*security.Caller, error) {
	return &security.Caller{AuthSource: security.AuthSourceKubeJWT,
		Identities: []string{"spiffe://cluster.local/ns/istio-system/sa/ztunnel"}, KubernetesInfo: z.info}, nil
}
func (ztunnelAuth) AuthenticatorType() string { return "ztunnel" }

func pod(ns, name, uid, sa, node string, phase corev1.PodPhase) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(uid)},
		Spec: corev1.PodSpec{ServiceAccountName: sa, NodeName: node}, Status: corev1.PodStatus{Phase: phase}}
}

// A trusted node account may have certificates issued for the service
// accounts of pods on its own node, and for nothing else; each refusal is
// Istio's opaque one, its reason logged.
func TestNodeImpersonation(t *testing.T) {
	pods := cache.NewIndexer(cache.MetaNamespaceKeyFunc, server.PodIndexers())
	for _, p := range []*corev1.Pod{
		pod("istio-system", "ztunnel-a", "uid-a", "ztunnel", "node-1", corev1.PodRunning),
		pod("shop", "cart-1", "uid-c", "cart", "node-1", corev1.PodRunning),
		pod("shop", "stock-1", "uid-s", "stock", "node-2", corev1.PodRunning),
		pod("shop", "old-1", "uid-o", "old", "node-1", corev1.PodFailed),
	} {
		if err := pods.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	trusted, ignored := server.ParseTrustedNodeAccounts("istio-system/ztunnel, bad-entry ,kube-system/")
	if len(trusted) != 1 || strings.Join(ignored, ",") != "bad-entry,kube-system/" {
		t.Fatalf("parsed %v, ignored %v", trusted, ignored)
	}
	ztunnel := security.KubernetesInfo{PodName: "ztunnel-a", PodNamespace: "istio-system", PodUID: "uid-a", PodServiceAccount: "ztunnel"}
	for _, tc := range []struct {
		name     string
		caller   security.KubernetesInfo
		identity string
		authz    bool
		reason   string
	}{
		{name: "a workload of its node", caller: ztunnel, identity: "spiffe://cluster.local/ns/shop/sa/cart", authz: true},
		{name: "a workload of another node", caller: ztunnel, identity: "spiffe://cluster.local/ns/shop/sa/stock", authz: true,
			reason: `no instances of "shop/stock" found on node "node-1"`},
		{name: "a failed pod's account", caller: ztunnel, identity: "spiffe://cluster.local/ns/shop/sa/old", authz: true,
			reason: `no instances of "shop/old" found on node "node-1"`},
		{name: "not an identity", caller: ztunnel, identity: "cart", authz: true, reason: "failed to validate impersonated identity cart"},
		{name: "an untrusted caller", caller: security.KubernetesInfo{PodName: "cart-1", PodNamespace: "shop", PodUID: "uid-c", PodServiceAccount: "cart"},
			identity: "spiffe://cluster.local/ns/shop/sa/cart", authz: true, reason: "is not allowed to impersonate"},
		{name: "a token of a pod gone", caller: security.KubernetesInfo{PodName: "ztunnel-b", PodNamespace: "istio-system", PodUID: "uid-b", PodServiceAccount: "ztunnel"},
			identity: "spiffe://cluster.local/ns/shop/sa/cart", authz: true, reason: "pod istio-system/ztunnel-b not found"},
		{name: "a token of an earlier pod of the name", caller: security.KubernetesInfo{PodName: "ztunnel-a", PodNamespace: "istio-system", PodUID: "uid-old", PodServiceAccount: "ztunnel"},
			identity: "spiffe://cluster.local/ns/shop/sa/cart", authz: true, reason: "pod found, but UID does not match: uid-a vs uid-old"},
		{name: "no authorizer", caller: ztunnel, identity: "spiffe://cluster.local/ns/shop/sa/cart",
			reason: "impersonation not allowed, as node authorizer (CA_TRUSTED_NODE_ACCOUNTS) is not configured"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			logs := logtest.Capture(t)
			stub := &stubCA{}
			o := server.Options{CA: stub, Authenticators: []security.Authenticator{ztunnelAuth{tc.caller}}}
			if tc.authz {
				o.NodeAuthorizer = server.NewPodNodeAuthorizer(trusted, pods)
			}
			_, err := server.New(o).CreateCertificate(tlsCtx(), &pb.IstioCertificateRequest{Csr: "x", Metadata: &structpb.Struct{
				Fields: map[string]*structpb.Value{server.ImpersonatedIdentity: structpb.NewStringValue(tc.identity)}}})
			if tc.reason == "" {
				if err != nil || len(stub.gotIDs) != 1 || stub.gotIDs[0] != tc.identity {
					t.Fatalf("signed for %v, err %v; want %s", stub.gotIDs, err, tc.identity)
				}
				return
			}
			wantStatus(t, err, codes.Unauthenticated, "request impersonation authentication failure")
			if stub.gotIDs != nil {
				t.Fatalf("signed for %v", stub.gotIDs)
			}
			if !strings.Contains(logs.String(), tc.reason) {
				t.Fatalf("log does not say %q:\n%s", tc.reason, logs)
			}
		})
	}
}
