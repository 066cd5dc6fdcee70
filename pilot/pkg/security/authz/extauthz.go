package authz

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	extauthzhttp "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_authz/v3"
	extauthztcp "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/ext_authz/v3"
	matcherpb "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
	meshconfig "istio.io/api/mesh/v1alpha1"

	"github.com/meshplane/istiod/pkg/protoconv"
)

// The ext_authz filters of the mesh's envoyExtAuthzGrpc and
// envoyExtAuthzHttp extension providers.

const (
	httpRBACFilter     = "envoy.filters.http.rbac"
	httpExtAuthzFilter = "envoy.filters.http.ext_authz"
	tcpRBACFilter      = "envoy.filters.network.rbac"
	tcpExtAuthzFilter  = "envoy.filters.network.ext_authz"

	// extAuthzPrefix starts the names of CUSTOM rules; the RBAC filter
	// writes the name of the shadow rule that matched to
	// istio_ext_authz_shadow_effective_policy_id, and ext_authz runs only
	// when it starts with istio-ext-authz-<provider>.
	extAuthzPrefix      = "istio-ext-authz"
	effectivePolicyID   = extAuthzStatPrefix + "shadow_effective_policy_id"
	defaultAuthzTimeout = 600 // seconds
)

// extAuthz is a resolved provider: its packed ext_authz configs (tcp nil
// for an HTTP provider), or why it cannot be used.
type extAuthz struct {
	http, tcp *anypb.Any
	err       error
}

// resolveProviders resolves the ext_authz providers of the mesh by name.
// Other providers are not listed. A provider with a bad name, a duplicate
// name, bad settings or an unknown service is listed with its error.
func resolveProviders(o *Options) map[string]*extAuthz {
	out := map[string]*extAuthz{}
	for i, p := range o.Mesh.GetExtensionProviders() {
		var errs []error
		name := p.GetName()
		if name == "" {
			errs = append(errs, fmt.Errorf("extension provider name must not be empty, found empty at index: %d", i))
		} else {
			if _, dup := out[name]; dup {
				errs = append(errs, fmt.Errorf("extension provider name must be unique, found duplicate: %s", name))
			}
			if err := validProviderName(name); err != nil {
				errs = append(errs, fmt.Errorf("invalid provider name %q: %v", name, err))
			}
		}
		var built *extAuthz
		var err error
		switch pp := p.GetProvider().(type) {
		case *meshconfig.MeshConfig_ExtensionProvider_EnvoyExtAuthzGrpc:
			built, err = grpcExtAuthz(o, name, pp.EnvoyExtAuthzGrpc)
		case *meshconfig.MeshConfig_ExtensionProvider_EnvoyExtAuthzHttp:
			built, err = httpExtAuthz(o, name, pp.EnvoyExtAuthzHttp)
		default:
			continue
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("failed to parse extension provider %q: %w", name, err))
		}
		if built == nil || len(errs) > 0 {
			built = &extAuthz{err: errors.Join(errs...)}
		}
		out[name] = built
	}
	return out
}

// validProviderName: provider names end up in metadata keys, rule names
// and stats, so they are DNS-1123 labels.
func validProviderName(name string) error {
	if len(name) > 63 {
		return fmt.Errorf("provider name too long (max 63 characters): %d", len(name))
	}
	for i, c := range name {
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '-':
		case c >= 'A' && c <= 'Z':
			return fmt.Errorf("uppercase letters not allowed (use lowercase): character %q at position %d", c, i)
		default:
			return fmt.Errorf("invalid character %q at position %d (only lowercase letters, digits, and hyphens allowed)", c, i)
		}
	}
	if strings.HasPrefix(name, "-") || strings.HasSuffix(name, "-") {
		return errors.New("provider name cannot start or end with hyphen")
	}
	return nil
}

// lookup resolves the provider's service and port.
func lookup(o *Options, service string, port uint32) (hostname, cluster string, errs []error) {
	if port < 1 || port > 65535 {
		errs = append(errs, fmt.Errorf("port must be in the range [1, 65535], found: %d", port))
	}
	switch {
	case service == "":
		errs = append(errs, errors.New("service must not be empty"))
	case o.LookupCluster == nil:
		errs = append(errs, fmt.Errorf("could not find service %s: no cluster lookup configured", service))
	default:
		h, c, err := o.LookupCluster(service, port)
		if err != nil {
			errs = append(errs, err)
		}
		hostname, cluster = h, c
	}
	return hostname, cluster, errs
}

func statusOnError(s string) (*typev3.HttpStatus, error) {
	if s == "" {
		return nil, nil
	}
	code, err := strconv.ParseInt(s, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("invalid statusOnError %q: %v", s, err)
	}
	if _, ok := typev3.StatusCode_name[int32(code)]; !ok {
		return nil, fmt.Errorf("unsupported statusOnError %s", s)
	}
	return &typev3.HttpStatus{Code: typev3.StatusCode(code)}, nil
}

func timeoutOrDefault(d *durationpb.Duration) *durationpb.Duration {
	if d == nil {
		return &durationpb.Duration{Seconds: defaultAuthzTimeout}
	}
	return proto.Clone(d).(*durationpb.Duration)
}

func requestBody(b *meshconfig.MeshConfig_ExtensionProvider_EnvoyExternalAuthorizationRequestBody) *extauthzhttp.BufferSettings {
	if b == nil {
		return nil
	}
	return &extauthzhttp.BufferSettings{MaxRequestBytes: b.GetMaxRequestBytes(), AllowPartialMessage: b.GetAllowPartialMessage(), PackAsBytes: b.GetPackAsBytes()}
}

// enabledFor makes ext_authz run only when a shadow rule of the provider
// matched in the RBAC filter named rbacFilter.
func enabledFor(rbacFilter, provider string) *matcherpb.MetadataMatcher {
	return metadataMatch(rbacFilter, []string{effectivePolicyID}, stringValue(prefixMatch(extAuthzPrefix+"-"+provider, false)))
}

func grpcExtAuthz(o *Options, name string, p *meshconfig.MeshConfig_ExtensionProvider_EnvoyExternalAuthorizationGrpcProvider) (*extAuthz, error) {
	hostname, cluster, errs := lookup(o, p.GetService(), p.GetPort())
	status, err := statusOnError(p.GetStatusOnError())
	if err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	grpc := &core.GrpcService{
		TargetSpecifier: &core.GrpcService_EnvoyGrpc_{EnvoyGrpc: &core.GrpcService_EnvoyGrpc{ClusterName: cluster, Authority: hostname}},
		Timeout:         timeoutOrDefault(p.GetTimeout()),
	}
	h := &extauthzhttp.ExtAuthz{
		StatusOnError:         status,
		FailureModeAllow:      p.GetFailOpen(),
		Services:              &extauthzhttp.ExtAuthz_GrpcService{GrpcService: grpc},
		FilterEnabledMetadata: enabledFor(httpRBACFilter, name),
		TransportApiVersion:   core.ApiVersion_V3,
		WithRequestBody:       requestBody(p.GetIncludeRequestBodyInCheck()),
	}
	t := &extauthztcp.ExtAuthz{
		StatPrefix:            tcpStatPrefix,
		FailureModeAllow:      p.GetFailOpen(),
		TransportApiVersion:   core.ApiVersion_V3,
		GrpcService:           grpc,
		FilterEnabledMetadata: enabledFor(tcpRBACFilter, name),
	}
	return &extAuthz{http: protoconv.MessageToAny(h), tcp: protoconv.MessageToAny(t)}, nil
}

func httpExtAuthz(o *Options, name string, p *meshconfig.MeshConfig_ExtensionProvider_EnvoyExternalAuthorizationHttpProvider) (*extAuthz, error) {
	hostname, cluster, errs := lookup(o, p.GetService(), p.GetPort())
	status, err := statusOnError(p.GetStatusOnError())
	if err != nil {
		errs = append(errs, err)
	}
	if pp := p.GetPathPrefix(); pp != "" {
		if _, err := url.Parse(pp); err != nil {
			errs = append(errs, fmt.Errorf("invalid pathPrefix %q: %v", pp, err))
		}
		if !strings.HasPrefix(pp, "/") {
			errs = append(errs, fmt.Errorf("pathPrefix must begin with `/`, found: %q", pp))
		}
	}
	for _, f := range []struct {
		name   string
		values []string
	}{
		{"includeRequestHeadersInCheck", p.GetIncludeRequestHeadersInCheck()},
		{"includeHeadersInCheck", p.GetIncludeHeadersInCheck()}, //nolint:staticcheck // deprecated, still honoured
		{"headersToDownstreamOnDeny", p.GetHeadersToDownstreamOnDeny()},
		{"headersToDownstreamOnAllow", p.GetHeadersToDownstreamOnAllow()},
		{"headersToUpstreamOnAllow", p.GetHeadersToUpstreamOnAllow()},
	} {
		if slices.Contains(f.values, "*") {
			errs = append(errs, fmt.Errorf("a single wildcard (\"*\") is not supported, change it to either prefix or suffix match: %s", f.name))
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}

	service := &extauthzhttp.HttpService{
		PathPrefix: p.GetPathPrefix(),
		ServerUri: &core.HttpUri{
			// Required by Envoy, unused by ext_authz but for the timeout.
			Uri:              "http://" + hostname,
			HttpUpstreamType: &core.HttpUri_Cluster{Cluster: cluster},
			Timeout:          timeoutOrDefault(p.GetTimeout()),
		},
	}
	if add := p.GetIncludeAdditionalHeadersInCheck(); len(add) > 0 {
		keys := make([]string, 0, len(add))
		for k := range add {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		req := &extauthzhttp.AuthorizationRequest{}
		for _, k := range keys {
			req.HeadersToAdd = append(req.HeadersToAdd, &core.HeaderValue{Key: k, Value: add[k]})
		}
		service.AuthorizationRequest = req
	}
	if len(p.GetHeadersToUpstreamOnAllow()) > 0 || len(p.GetHeadersToDownstreamOnDeny()) > 0 || len(p.GetHeadersToDownstreamOnAllow()) > 0 {
		service.AuthorizationResponse = &extauthzhttp.AuthorizationResponse{
			AllowedUpstreamHeaders:        headerList(p.GetHeadersToUpstreamOnAllow()),
			AllowedClientHeaders:          headerList(p.GetHeadersToDownstreamOnDeny()),
			AllowedClientHeadersOnSuccess: headerList(p.GetHeadersToDownstreamOnAllow()),
		}
	}
	h := &extauthzhttp.ExtAuthz{
		StatusOnError:         status,
		FailureModeAllow:      p.GetFailOpen(),
		TransportApiVersion:   core.ApiVersion_V3,
		Services:              &extauthzhttp.ExtAuthz_HttpService{HttpService: service},
		FilterEnabledMetadata: enabledFor(httpRBACFilter, name),
		WithRequestBody:       requestBody(p.GetIncludeRequestBodyInCheck()),
	}
	allowed := headerList(p.GetIncludeRequestHeadersInCheck())
	if allowed == nil {
		allowed = headerList(p.GetIncludeHeadersInCheck()) //nolint:staticcheck // deprecated, used when the new field is unset
	}
	h.AllowedHeaders = allowed
	return &extAuthz{http: protoconv.MessageToAny(h)}, nil
}

// headerList matches header names case-insensitively, *x and x* as suffix
// and prefix.
func headerList(headers []string) *matcherpb.ListStringMatcher {
	if len(headers) == 0 {
		return nil
	}
	l := &matcherpb.ListStringMatcher{}
	for _, h := range headers {
		var m *matcherpb.StringMatcher
		if after, ok := strings.CutPrefix(h, "*"); ok {
			m = suffixMatch(after, true)
		} else if before, ok := strings.CutSuffix(h, "*"); ok {
			m = prefixMatch(before, true)
		} else {
			m = exactMatch(h, true)
		}
		l.Patterns = append(l.Patterns, m)
	}
	return l
}
