package gateway

import (
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/meshplane/istiod/pkg/config"
)

// Grant is one from→to pair of a ReferenceGrant: objects of From in
// FromNamespace may refer to To objects of the grant's namespace (named
// Name, or any when Name is "").
type Grant struct {
	// Source is the ReferenceGrant (namespace/name).
	Source        string
	From          GroupKind
	FromNamespace string
	To            GroupKind
	ToNamespace   string
	Name          string
}

// ResourceName keys a grant by its source and pair.
func (g Grant) ResourceName() string {
	name := g.Name
	if name == "" {
		name = "*"
	}
	return g.Source + "/" + g.From.String() + "/" + g.FromNamespace + "/" + g.To.String() + "/" + name
}

// PairKey is the lookup key of a grant: from kind and namespace, to kind
// and namespace.
func (g Grant) PairKey() string {
	return pairKey(g.From, g.FromNamespace, g.To, g.ToNamespace)
}

func pairKey(from GroupKind, fromNS string, to GroupKind, toNS string) string {
	return from.Group + "/" + from.Kind + "/" + fromNS + ">" + to.Group + "/" + to.Kind + "/" + toNS
}

var (
	grantFromKinds = map[GroupKind]bool{kindGateway: true, kindHTTPRoute: true, kindGRPCRoute: true, kindTLSRoute: true,
		kindTCPRoute: true, kindListenerSet: true}
	grantToKinds = map[GroupKind]bool{kindConfigMap: true, kindSecret: true, kindService: true}
)

// ConvertGrant lists the pairs of a ReferenceGrant this controller honours
// (pairs of other kinds may be for another controller).
func ConvertGrant(cfg config.Config) []Grant {
	spec, ok := cfg.Spec.(*gatewayv1.ReferenceGrantSpec)
	if !ok || spec == nil {
		return nil
	}
	var out []Grant
	for _, from := range spec.From {
		fk := GroupKind{Group: string(from.Group), Kind: string(from.Kind)}
		if !grantFromKinds[fk] {
			continue
		}
		for _, to := range spec.To {
			tk := GroupKind{Group: string(to.Group), Kind: string(to.Kind)}
			if !grantToKinds[tk] {
				continue
			}
			out = append(out, Grant{Source: cfg.Namespace + "/" + cfg.Name, From: fk, FromNamespace: string(from.Namespace),
				To: tk, ToNamespace: cfg.Namespace, Name: string(orDefault(to.Name, ""))})
		}
	}
	return out
}

// grantsAllow reports whether one of grants (of one pair) admits name.
func grantsAllow(grants []Grant, name string) bool {
	for _, g := range grants {
		if g.Name == "" || g.Name == name {
			return true
		}
	}
	return false
}
