package authenticate_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"google.golang.org/grpc/metadata"

	"github.com/meshplane/istiod/pkg/security"
	"github.com/meshplane/istiod/pkg/security/authenticate"
)

// apiserver answers TokenReviews like a kube-apiserver for the tokens it
// knows: each token is valid for its audiences and names a service account.
type apiserver struct {
	tokens  map[string]tokenInfo
	reviews []authenticationv1.TokenReviewSpec
	err     error
}

type tokenInfo struct {
	username  string
	groups    []string
	audiences []string
	extra     map[string]authenticationv1.ExtraValue
	// raw, when set, is returned as the status as is
	raw *authenticationv1.TokenReviewStatus
}

func sa(ns, name string, aud ...string) tokenInfo {
	return tokenInfo{
		username:  "system:serviceaccount:" + ns + ":" + name,
		groups:    []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"},
		audiences: aud,
	}
}

func (a *apiserver) client() *fake.Clientset {
	c := fake.NewClientset()
	c.PrependReactor("create", "tokenreviews", func(action k8stesting.Action) (bool, runtime.Object, error) {
		tr := action.(k8stesting.CreateAction).GetObject().(*authenticationv1.TokenReview).DeepCopy()
		a.reviews = append(a.reviews, tr.Spec)
		if a.err != nil {
			return true, nil, a.err
		}
		info, ok := a.tokens[tr.Spec.Token]
		switch {
		case !ok:
			tr.Status = authenticationv1.TokenReviewStatus{Error: "[invalid bearer token, square/go-jose: error in cryptographic primitive]"}
		case info.raw != nil:
			tr.Status = *info.raw
		default:
			var common []string
			for _, want := range tr.Spec.Audiences {
				if slices.Contains(info.audiences, want) {
					common = append(common, want)
				}
			}
			if len(common) == 0 {
				tr.Status = authenticationv1.TokenReviewStatus{Error: `[invalid bearer token, token audiences ["https://kubernetes.default.svc"] is invalid for the target audiences ["istio-ca"]]`}
				break
			}
			tr.Status = authenticationv1.TokenReviewStatus{
				Authenticated: true,
				Audiences:     common,
				User:          authenticationv1.UserInfo{Username: info.username, Groups: info.groups, Extra: info.extra},
			}
		}
		return true, tr, nil
	})
	return c
}

func withMD(kv ...string) context.Context {
	return metadata.NewIncomingContext(context.Background(), metadata.Pairs(kv...))
}

func TestKubeJWTAuthenticator(t *testing.T) {
	pp := sa("bookinfo", "bookinfo-productpage", "istio-ca")
	pp.extra = map[string]authenticationv1.ExtraValue{
		"authentication.kubernetes.io/pod-name": {"productpage-v1-abc"},
		"authentication.kubernetes.io/pod-uid":  {"uid-1"},
	}
	notSA := sa("bookinfo", "x", "istio-ca")
	notSA.groups = []string{"system:authenticated"}
	badUser := sa("bookinfo", "x", "istio-ca")
	badUser.username = "alice"
	api := &apiserver{tokens: map[string]tokenInfo{
		"pp":       pp,
		"intruder": sa("elsewhere", "intruder", "istio-ca"),
		"kube-aud": sa("bookinfo", "bookinfo-productpage", "https://kubernetes.default.svc"),
		"not-sa":   notSA,
		"bad-user": badUser,
		"unauth":   {raw: &authenticationv1.TokenReviewStatus{Authenticated: false}},
		// an API server that does not check audiences answers without them
		"no-aud": {raw: &authenticationv1.TokenReviewStatus{Authenticated: true, User: authenticationv1.UserInfo{
			Username: "system:serviceaccount:bookinfo:x", Groups: []string{"system:serviceaccounts"}}}},
	}}
	a := authenticate.NewKubeJWTAuthenticator(authenticate.KubeJWTOptions{Client: api.client()})
	if a.AuthenticatorType() != "KubeJWTAuthenticator" {
		t.Fatal(a.AuthenticatorType())
	}
	for _, tc := range []struct {
		name    string
		ctx     context.Context
		want    string // identity
		wantErr string
		reviews int // TokenReviews this call makes
	}{
		{"valid token", withMD("authorization", "Bearer pp"), "spiffe://cluster.local/ns/bookinfo/sa/bookinfo-productpage", "", 1},
		{"ClusterID of this cluster", withMD("authorization", "Bearer pp", "ClusterID", "Kubernetes"), "spiffe://cluster.local/ns/bookinfo/sa/bookinfo-productpage", "", 1},
		{"the token's identity, whatever else", withMD("authorization", "Bearer intruder"), "spiffe://cluster.local/ns/elsewhere/sa/intruder", "", 1},
		{"no metadata", context.Background(), "", "target JWT extraction error: no metadata is attached", 0},
		{"no token", withMD("other", "x"), "", "target JWT extraction error: no HTTP authorization header exists", 0},
		{"not bearer", withMD("authorization", "Basic abc"), "", "target JWT extraction error: no bearer token exists in HTTP authorization header", 0},
		{"wrong audience", withMD("authorization", "Bearer kube-aud"), "",
			`failed to validate the JWT from cluster "": the service account authentication returns an error: [invalid bearer token, token audiences ["https://kubernetes.default.svc"] is invalid for the target audiences ["istio-ca"]]`, 1},
		{"foreign cluster", withMD("authorization", "Bearer pp", "ClusterID", "other-cluster"), "",
			`client claims to be in cluster "other-cluster", but we only know about local cluster "Kubernetes" and remote clusters []`, 0},
		{"one foreign ClusterID among several", withMD("authorization", "Bearer pp", "clusterid", "Kubernetes", "clusterid", "other-cluster"), "",
			`client claims to be in cluster "other-cluster", but we only know about local cluster "Kubernetes" and remote clusters []`, 0},
		{"unknown token", withMD("authorization", "Bearer nope"), "", `failed to validate the JWT from cluster "": the service account authentication returns an error: [invalid bearer token, square/go-jose: error in cryptographic primitive]`, 1},
		{"unauthenticated review", withMD("authorization", "Bearer unauth"), "", `failed to validate the JWT from cluster "": the token is not authenticated`, 1},
		{"not a service account", withMD("authorization", "Bearer not-sa"), "", `failed to validate the JWT from cluster "": the token is not a service account`, 1},
		{"bad username", withMD("authorization", "Bearer bad-user"), "", `failed to validate the JWT from cluster "": invalid username field in the token review result`, 1},
		{"review without our audience", withMD("authorization", "Bearer no-aud"), "", `failed to validate the JWT from cluster "": token audiences [] is invalid for the target audiences ["istio-ca"]`, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := len(api.reviews)
			c, err := a.Authenticate(tc.ctx)
			if got := len(api.reviews) - before; got != tc.reviews {
				t.Errorf("%d TokenReviews, want %d", got, tc.reviews)
			}
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr || c != nil {
					t.Fatalf("err = %v\nwant %s", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.AuthSource != security.AuthSourceKubeJWT || !slices.Equal(c.Identities, []string{tc.want}) {
				t.Fatalf("caller %+v", c)
			}
		})
	}
	// the review asked for our audience with the token
	if r := api.reviews[0]; r.Token != "pp" || !slices.Equal(r.Audiences, []string{"istio-ca"}) {
		t.Fatalf("review spec %+v", r)
	}
	c, _ := a.Authenticate(withMD("authorization", "Bearer pp"))
	want := security.KubernetesInfo{PodName: "productpage-v1-abc", PodNamespace: "bookinfo", PodUID: "uid-1", PodServiceAccount: "bookinfo-productpage"}
	if c.KubernetesInfo != want {
		t.Fatalf("KubernetesInfo %+v", c.KubernetesInfo)
	}
}

func TestKubeJWTOptions(t *testing.T) {
	api := &apiserver{tokens: map[string]tokenInfo{"t": sa("ns", "sa", "aud-b")}}
	td := "td-1"
	a := authenticate.NewKubeJWTAuthenticator(authenticate.KubeJWTOptions{
		Client: api.client(), Audiences: []string{"aud-a", "aud-b"}, ClusterID: "c1",
		ClusterAliases: map[string]string{"old-name": "c1"}, TrustDomainFunc: func() string { return td },
	})
	c, err := a.Authenticate(withMD("authorization", "Bearer t", "clusterid", "old-name"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Identities[0] != "spiffe://td-1/ns/ns/sa/sa" || !slices.Equal(api.reviews[0].Audiences, []string{"aud-a", "aud-b"}) {
		t.Fatalf("identity %v audiences %v", c.Identities, api.reviews[0].Audiences)
	}
	td = "td-2"
	if c, _ := a.Authenticate(withMD("authorization", "Bearer t", "clusterid", "c1")); c.Identities[0] != "spiffe://td-2/ns/ns/sa/sa" {
		t.Fatalf("trust domain not read per call: %v", c.Identities)
	}
	if _, err := a.Authenticate(withMD("authorization", "Bearer t", "clusterid", "Kubernetes")); err == nil {
		t.Fatal("the default cluster ID accepted when another is configured")
	}
	static := authenticate.NewKubeJWTAuthenticator(authenticate.KubeJWTOptions{Client: api.client(), Audiences: []string{"aud-b"}, TrustDomain: "example.org"})
	if c, err := static.Authenticate(withMD("authorization", "Bearer t")); err != nil || c.Identities[0] != "spiffe://example.org/ns/ns/sa/sa" {
		t.Fatalf("%v %v", c, err)
	}
	api.err = errors.New("connection refused")
	if _, err := a.Authenticate(withMD("authorization", "Bearer t")); err == nil || err.Error() != `failed to validate the JWT from cluster "": connection refused` {
		t.Fatalf("err = %v", err)
	}
}

func TestExtractBearerToken(t *testing.T) {
	tok, err := authenticate.ExtractBearerToken(withMD("authorization", "Istio x", "authorization", "Bearer abc"))
	if err != nil || tok != "abc" {
		t.Fatalf("%q %v", tok, err)
	}
}
