package authenticate

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/meshplane/istiod/pkg/security"
)

const (
	// KubeJWTAuthenticatorType names the authenticator in logs.
	KubeJWTAuthenticatorType = "KubeJWTAuthenticator"
	// DefaultTokenAudience is TOKEN_AUDIENCES' default.
	DefaultTokenAudience = "istio-ca"
	// DefaultClusterID is CLUSTER_ID's default.
	DefaultClusterID = "Kubernetes"
	// DefaultTrustDomain is the mesh's default trust domain.
	DefaultTrustDomain = "cluster.local"

	podNameKey = "authentication.kubernetes.io/pod-name"
	podUIDKey  = "authentication.kubernetes.io/pod-uid"
)

// KubeJWTOptions configure a KubeJWTAuthenticator.
type KubeJWTOptions struct {
	// Client makes the TokenReviews (the cluster istiod runs against).
	Client kubernetes.Interface
	// TrustDomain of the identities (default cluster.local).
	TrustDomain string
	// TrustDomainFunc, when set, is read on every call instead of
	// TrustDomain (the mesh config's trust domain may change).
	TrustDomainFunc func() string
	// Audiences sent in the TokenReview; a token must be valid for one of
	// them (TOKEN_AUDIENCES, default ["istio-ca"]).
	Audiences []string
	// ClusterID is this cluster's ID (CLUSTER_ID, default Kubernetes). A
	// caller's ClusterID header must be absent, this ID or an alias of it.
	ClusterID string
	// ClusterAliases maps other names to ClusterID (pilot-discovery
	// --clusterAliases).
	ClusterAliases map[string]string
}

// KubeJWTAuthenticator authenticates a caller by its Kubernetes service
// account token (metadata "authorization: Bearer <token>") with a
// TokenReview. The identity is spiffe://<trust domain>/ns/<ns>/sa/<sa> of
// the reviewed user system:serviceaccount:<ns>:<sa>. Tokens of another
// cluster (ClusterID header) are refused: remote clusters are not
// supported.
type KubeJWTAuthenticator struct {
	o KubeJWTOptions
}

var _ security.Authenticator = (*KubeJWTAuthenticator)(nil)

// NewKubeJWTAuthenticator returns the authenticator with o's defaults filled.
func NewKubeJWTAuthenticator(o KubeJWTOptions) *KubeJWTAuthenticator {
	if o.TrustDomain == "" {
		o.TrustDomain = DefaultTrustDomain
	}
	if len(o.Audiences) == 0 {
		o.Audiences = []string{DefaultTokenAudience}
	}
	if o.ClusterID == "" {
		o.ClusterID = DefaultClusterID
	}
	return &KubeJWTAuthenticator{o: o}
}

// AuthenticatorType implements security.Authenticator.
func (a *KubeJWTAuthenticator) AuthenticatorType() string { return KubeJWTAuthenticatorType }

// Authenticate implements security.Authenticator.
func (a *KubeJWTAuthenticator) Authenticate(ctx context.Context) (*security.Caller, error) {
	token, err := ExtractBearerToken(ctx)
	if err != nil {
		return nil, fmt.Errorf("target JWT extraction error: %v", err)
	}
	cluster := ""
	for _, id := range clusterIDs(ctx) {
		if !a.isLocalCluster(id) {
			return nil, fmt.Errorf("client claims to be in cluster %q, but we only know about local cluster %q and remote clusters []",
				id, a.o.ClusterID)
		}
		cluster = id
	}
	info, err := a.review(ctx, token)
	if err != nil {
		return nil, fmt.Errorf("failed to validate the JWT from cluster %q: %v", cluster, err)
	}
	if info.PodServiceAccount == "" {
		return nil, errors.New("failed to parse the JWT; service account required")
	}
	if info.PodNamespace == "" {
		return nil, errors.New("failed to parse the JWT; namespace required")
	}
	td := a.o.TrustDomain
	if a.o.TrustDomainFunc != nil {
		if v := a.o.TrustDomainFunc(); v != "" {
			td = v
		}
	}
	return &security.Caller{
		AuthSource:     security.AuthSourceKubeJWT,
		Identities:     []string{security.SpiffeID(td, info.PodNamespace, info.PodServiceAccount)},
		KubernetesInfo: info,
	}, nil
}

func (a *KubeJWTAuthenticator) isLocalCluster(id string) bool {
	return id == "" || id == a.o.ClusterID || a.o.ClusterAliases[id] == a.o.ClusterID
}

// review asks the API server about token, as Istio's ValidateK8sJwt, and
// also requires the review to name one of our audiences.
func (a *KubeJWTAuthenticator) review(ctx context.Context, token string) (security.KubernetesInfo, error) {
	tr := &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{
		Token:     token,
		Audiences: append([]string(nil), a.o.Audiences...),
	}}
	res, err := a.o.Client.AuthenticationV1().TokenReviews().Create(ctx, tr, metav1.CreateOptions{})
	if err != nil {
		return security.KubernetesInfo{}, err
	}
	st := res.Status
	if st.Error != "" {
		return security.KubernetesInfo{}, fmt.Errorf("the service account authentication returns an error: %v", st.Error)
	}
	if !st.Authenticated {
		return security.KubernetesInfo{}, errors.New("the token is not authenticated")
	}
	if !slices.Contains(st.User.Groups, "system:serviceaccounts") {
		return security.KubernetesInfo{}, errors.New("the token is not a service account")
	}
	// The API server returns the audiences of the request the token is
	// valid for; none means it did not check them.
	if !slices.ContainsFunc(st.Audiences, func(s string) bool { return slices.Contains(a.o.Audiences, s) }) {
		return security.KubernetesInfo{}, fmt.Errorf("token audiences %q is invalid for the target audiences %q", st.Audiences, a.o.Audiences)
	}
	parts := strings.Split(st.User.Username, ":")
	if len(parts) != 4 || parts[0] != "system" || parts[1] != "serviceaccount" {
		return security.KubernetesInfo{}, errors.New("invalid username field in the token review result")
	}
	return security.KubernetesInfo{
		PodName:           first(st.User.Extra[podNameKey]),
		PodNamespace:      parts[2],
		PodUID:            first(st.User.Extra[podUIDKey]),
		PodServiceAccount: parts[3],
	}, nil
}

func first(v authenticationv1.ExtraValue) string {
	if len(v) == 0 {
		return ""
	}
	return v[0]
}
