package validation

import (
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	meshconfig "istio.io/api/mesh/v1alpha1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// MeshConfig is validated as read from the mesh file: fields left unset are
// filled by defaults later, so only the fields present are checked.

const (
	meshConnectTimeoutMax = time.Hour
	meshProviderNote      = "found invalid extension provider (can be ignored if the given extension provider is not used)"
)

// ValidateMeshConfig checks a mesh configuration. Invalid extension providers
// are warnings, as Istio only logs them; everything else is an error.
func ValidateMeshConfig(mesh *meshconfig.MeshConfig) (Warning, error) {
	if mesh == nil {
		mesh = &meshconfig.MeshConfig{}
	}
	r := &Report{}
	secMeshListeners(r, mesh)
	secMeshIngress(r, mesh)
	secMeshTrust(r, mesh)
	if dc := mesh.GetDefaultConfig(); dc != nil {
		secMeshProxyConfig(r, Path("defaultConfig"), dc)
	}
	for i, s := range mesh.GetServiceSettings() {
		p := Path("serviceSettings").Index(i)
		if s == nil {
			r.Errorf(p, "serviceSettings entry must not be null")
			continue
		}
		for j, h := range s.GetHosts() {
			r.Add(p.Field("hosts").Index(j), CheckWildcardDNSName(h))
		}
	}
	secLocalityLbSetting(r, Path("localityLbSetting"), mesh.GetLocalityLbSetting())
	secMeshTrafficPolicies(r, mesh)
	secMeshExportTo(r, Path("defaultServiceExportTo"), mesh.GetDefaultServiceExportTo())
	secMeshExportTo(r, Path("defaultVirtualServiceExportTo"), mesh.GetDefaultVirtualServiceExportTo())
	secMeshExportTo(r, Path("defaultDestinationRuleExportTo"), mesh.GetDefaultDestinationRuleExportTo())
	for i, sel := range mesh.GetDiscoverySelectors() {
		secMeshLabelSelector(r, Path("discoverySelectors").Index(i), sel)
	}
	for i, sc := range mesh.GetServiceScopeConfigs() {
		p := Path("serviceScopeConfigs").Index(i)
		if sc == nil {
			r.Errorf(p, "serviceScopeConfigs entry must not be null")
			continue
		}
		if sc.GetNamespaceSelector() != nil {
			secMeshLabelSelector(r, p.Field("namespaceSelector"), sc.GetNamespaceSelector())
		}
		if sc.GetServicesSelector() != nil {
			secMeshLabelSelector(r, p.Field("servicesSelector"), sc.GetServicesSelector())
		}
	}
	secMeshTLS(r, mesh)
	secExtensionProviders(r, mesh.GetExtensionProviders())
	return r.Result()
}

func secMeshListeners(r *Report, mesh *meshconfig.MeshConfig) {
	ports := []struct {
		name string
		v    int32
	}{
		{"proxyListenPort", mesh.GetProxyListenPort()},
		{"proxyInboundListenPort", mesh.GetProxyInboundListenPort()},
		{"proxyHttpPort", mesh.GetProxyHttpPort()},
	}
	for _, pt := range ports {
		if pt.v != 0 {
			r.Add(Path(pt.name), secIntPort(int64(pt.v)))
		}
	}
	if d := mesh.GetConnectTimeout(); d != nil {
		if err := CheckDuration(d); err != nil {
			r.Errorf("connectTimeout", "invalid connect timeout: %v", err)
		} else if d.AsDuration() > meshConnectTimeoutMax {
			r.Errorf("connectTimeout", "invalid connect timeout: %v exceeds the maximum of %v", d.AsDuration(), meshConnectTimeoutMax)
		}
	}
	if d := mesh.GetProtocolDetectionTimeout(); d != nil {
		if err := CheckNonNegativeDuration(d); err != nil {
			r.Errorf("protocolDetectionTimeout", "invalid protocol detection timeout: %v", err)
		}
	}
	secOptionalNonNegative(r, "hboneIdleTimeout", mesh.GetHboneIdleTimeout())
	if d := mesh.GetDnsRefreshRate(); d != nil {
		r.Add("dnsRefreshRate", CheckDuration(d))
	}
	if ka := mesh.GetTcpKeepalive(); ka != nil {
		if ka.GetTime() != nil {
			r.Add(Path("tcpKeepalive").Field("time"), CheckDuration(ka.GetTime()))
		}
		if ka.GetInterval() != nil {
			r.Add(Path("tcpKeepalive").Field("interval"), CheckDuration(ka.GetInterval()))
		}
	}
}

func secOptionalNonNegative(r *Report, p Path, d *durationpb.Duration) {
	if d != nil {
		r.Add(p, CheckNonNegativeDuration(d))
	}
}

func secMeshIngress(r *Report, mesh *meshconfig.MeshConfig) {
	if !secEnumKnown(mesh.GetIngressControllerMode(), meshconfig.MeshConfig_IngressControllerMode_name) {
		r.Errorf("ingressControllerMode", "unknown ingress controller mode %d", int32(mesh.GetIngressControllerMode()))
	}
	if c := mesh.GetIngressClass(); c != "" {
		if errs := validation.IsDNS1123Subdomain(c); len(errs) > 0 {
			r.Errorf("ingressClass", "invalid ingress class %q: %s", c, strings.Join(errs, "; "))
		}
	}
	if s := mesh.GetIngressService(); s != "" {
		if errs := validation.IsDNS1123Subdomain(s); len(errs) > 0 {
			r.Errorf("ingressService", "invalid ingress service %q: %s", s, strings.Join(errs, "; "))
		}
	}
	if s := mesh.GetIngressSelector(); s != "" {
		if errs := validation.IsValidLabelValue(s); len(errs) > 0 {
			r.Errorf("ingressSelector", "invalid ingress selector %q: %s", s, strings.Join(errs, "; "))
		}
	}
	if !secEnumKnown(mesh.GetAccessLogEncoding(), meshconfig.MeshConfig_AccessLogEncoding_name) {
		r.Errorf("accessLogEncoding", "unknown access log encoding %d", int32(mesh.GetAccessLogEncoding()))
	}
	if !secEnumKnown(mesh.GetH2UpgradePolicy(), meshconfig.MeshConfig_H2UpgradePolicy_name) {
		r.Errorf("h2UpgradePolicy", "unknown h2 upgrade policy %d", int32(mesh.GetH2UpgradePolicy()))
	}
}

func secMeshTrust(r *Report, mesh *meshconfig.MeshConfig) {
	if td := mesh.GetTrustDomain(); td != "" {
		if err := secTrustDomain(td); err != nil {
			r.Errorf("trustDomain", "%v", err)
		}
	}
	for i, a := range mesh.GetTrustDomainAliases() {
		if err := secTrustDomain(a); err != nil {
			r.Errorf(Path("trustDomainAliases").Index(i), "%v", err)
		}
	}
	if ns := mesh.GetRootNamespace(); ns != "" {
		r.Add("rootNamespace", CheckDNS1123Label(ns))
	}
}

func secMeshTrafficPolicies(r *Report, mesh *meshconfig.MeshConfig) {
	if o := mesh.GetOutboundTrafficPolicy(); o != nil &&
		!secEnumKnown(o.GetMode(), meshconfig.MeshConfig_OutboundTrafficPolicy_Mode_name) {
		r.Errorf(Path("outboundTrafficPolicy").Field("mode"), "unknown outbound traffic policy mode %d", int32(o.GetMode()))
	}
	if in := mesh.GetInboundTrafficPolicy(); in != nil &&
		!secEnumKnown(in.GetMode(), meshconfig.MeshConfig_InboundTrafficPolicy_Mode_name) {
		r.Errorf(Path("inboundTrafficPolicy").Field("mode"), "unknown inbound traffic policy mode %d", int32(in.GetMode()))
	}
}

// secMeshExportTo checks a default exportTo list: ".", "*" or namespaces,
// without duplicates, and "*" alone.
func secMeshExportTo(r *Report, p Path, entries []string) {
	seen := map[string]bool{}
	for i, e := range entries {
		ep := p.Index(i)
		if seen[e] {
			r.Errorf(ep, "duplicate entry %q in exportTo", e)
			continue
		}
		seen[e] = true
		if e != "." && e != "*" {
			if err := CheckDNS1123Label(e); err != nil {
				r.Errorf(ep, "invalid exportTo entry (must be '.', '*' or a namespace): %v", err)
			}
		}
	}
	if seen["*"] && len(entries) > 1 {
		r.Errorf(p, "cannot have both public (*) and non-public exportTo values")
	}
}

// secMeshLabelSelector validates a Kubernetes-style label selector.
func secMeshLabelSelector(r *Report, p Path, sel *meshconfig.LabelSelector) {
	if sel == nil {
		r.Errorf(p, "label selector must not be null")
		return
	}
	for _, k := range secSortedKeys(sel.GetMatchLabels()) {
		r.Add(p.Field("matchLabels").Key(k), checkKubeLabels(map[string]string{k: sel.GetMatchLabels()[k]}))
	}
	for i, req := range sel.GetMatchExpressions() {
		ep := p.Field("matchExpressions").Index(i)
		if req == nil {
			r.Errorf(ep, "match expression must not be null")
			continue
		}
		if errs := validation.IsQualifiedName(req.GetKey()); len(errs) > 0 {
			r.Errorf(ep.Field("key"), "invalid label key %q: %s", req.GetKey(), strings.Join(errs, "; "))
		}
		switch req.GetOperator() {
		case "In", "NotIn":
			if len(req.GetValues()) == 0 {
				r.Errorf(ep.Field("values"), "values must be non-empty when operator is %s", req.GetOperator())
			}
		case "Exists", "DoesNotExist":
			if len(req.GetValues()) > 0 {
				r.Errorf(ep.Field("values"), "values must be empty when operator is %s", req.GetOperator())
			}
		default:
			r.Errorf(ep.Field("operator"), "unknown operator %q (must be In, NotIn, Exists or DoesNotExist)", req.GetOperator())
		}
		for j, v := range req.GetValues() {
			if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
				r.Errorf(ep.Field("values").Index(j), "invalid label value %q: %s", v, strings.Join(errs, "; "))
			}
		}
	}
}

var secKnownECDHCurves = map[string]bool{
	"P-224": true, "P-256": true, "P-384": true, "P-521": true,
	"X25519": true, "X25519Kyber768Draft00": true, "X25519MLKEM768": true,
}

func secMeshTLS(r *Report, mesh *meshconfig.MeshConfig) {
	if m := mesh.GetMeshMTLS(); m != nil {
		if m.GetEcdhCurves() != nil {
			r.Errorf(Path("meshMTLS").Field("ecdhCurves"), "mesh TLS does not support ECDH curves configuration")
		}
		if !secEnumKnown(m.GetMinProtocolVersion(), meshconfig.MeshConfig_TLSConfig_TLSProtocol_name) {
			r.Errorf(Path("meshMTLS").Field("minProtocolVersion"), "unknown TLS version %d", int32(m.GetMinProtocolVersion()))
		}
	}
	td := mesh.GetTlsDefaults()
	if td == nil {
		return
	}
	if !secEnumKnown(td.GetMinProtocolVersion(), meshconfig.MeshConfig_TLSConfig_TLSProtocol_name) {
		r.Errorf(Path("tlsDefaults").Field("minProtocolVersion"), "unknown TLS version %d", int32(td.GetMinProtocolVersion()))
	}
	seen := map[string]bool{}
	for i, c := range td.GetEcdhCurves() {
		p := Path("tlsDefaults").Field("ecdhCurves").Index(i)
		switch {
		case c != "" && !secKnownECDHCurves[c]:
			r.Warnf(p, "detected unrecognized ECDH curve %q", c)
		case seen[c]:
			r.Warnf(p, "detected duplicate ECDH curve %q", c)
		}
		seen[c] = true
	}
}

// secMeshProxyConfig checks the fields of defaultConfig that are set.
func secMeshProxyConfig(r *Report, p Path, pc *meshconfig.ProxyConfig) {
	if d := pc.GetDrainDuration(); d != nil {
		if err := CheckDuration(d); err != nil {
			r.Errorf(p.Field("drainDuration"), "invalid drain duration: %v", err)
		} else if d.AsDuration()%time.Second != 0 {
			r.Errorf(p.Field("drainDuration"), "drain time only supports durations to seconds precision")
		}
	}
	secOptionalNonNegative(r, p.Field("terminationDrainDuration"), pc.GetTerminationDrainDuration())
	addrs := []struct {
		name, v string
	}{
		{"discoveryAddress", pc.GetDiscoveryAddress()},
		{"statsdUdpAddress", pc.GetStatsdUdpAddress()},
		{"envoyMetricsService.address", pc.GetEnvoyMetricsService().GetAddress()},
		{"envoyAccessLogService.address", pc.GetEnvoyAccessLogService().GetAddress()},
	}
	for _, a := range addrs {
		if a.v != "" {
			r.Add(p.Field(a.name), secHostPort(a.v))
		}
	}
	if err := secIntPort(int64(pc.GetProxyAdminPort())); pc.GetProxyAdminPort() != 0 && err != nil {
		r.Errorf(p.Field("proxyAdminPort"), "invalid proxy admin port: %v", err)
	}
	if err := secIntPort(int64(pc.GetStatusPort())); pc.GetStatusPort() != 0 && err != nil {
		r.Errorf(p.Field("statusPort"), "invalid status port: %v", err)
	}
	if c := pc.GetConcurrency(); c != nil && c.GetValue() < 0 {
		r.Errorf(p.Field("concurrency"), "concurrency must be greater than or equal to 0, found %d", c.GetValue())
	}
	if !secEnumKnown(pc.GetControlPlaneAuthPolicy(), meshconfig.AuthenticationPolicy_name) {
		r.Errorf(p.Field("controlPlaneAuthPolicy"), "unrecognized control plane auth policy %d", int32(pc.GetControlPlaneAuthPolicy()))
	}
	if !secEnumKnown(pc.GetInterceptionMode(), meshconfig.ProxyConfig_InboundInterceptionMode_name) {
		r.Errorf(p.Field("interceptionMode"), "unknown interception mode %d", int32(pc.GetInterceptionMode()))
	}
	for _, k := range secSortedKeys(pc.GetProxyMetadata()) {
		if k == "" {
			r.Errorf(p.Field("proxyMetadata"), "proxy metadata key may not be empty")
		}
	}
	secProxyImage(r, p.Field("image"), pc.GetImage())
	secMeshProxyTracing(r, p.Field("tracing"), pc.GetTracing())
	secPrivateKeyProvider(r, p.Field("privateKeyProvider"), pc.GetPrivateKeyProvider())
}

func secMeshProxyTracing(r *Report, p Path, t *meshconfig.Tracing) {
	if t == nil {
		return
	}
	hostIP := func(a string) string { return strings.Replace(a, "$(HOST_IP)", "127.0.0.1", 1) }
	switch tr := t.GetTracer().(type) {
	case *meshconfig.Tracing_Zipkin_:
		r.Add(p.Field("zipkin").Field("address"), secHostPort(hostIP(tr.Zipkin.GetAddress())))
	case *meshconfig.Tracing_Datadog_:
		r.Add(p.Field("datadog").Field("address"), secHostPort(hostIP(tr.Datadog.GetAddress())))
	case *meshconfig.Tracing_Lightstep_:
		r.Add(p.Field("lightstep").Field("address"), secHostPort(tr.Lightstep.GetAddress()))
		if tr.Lightstep.GetAccessToken() == "" {
			r.Errorf(p.Field("lightstep").Field("accessToken"), "access token is required")
		}
	}
	for _, k := range secSortedKeys(t.GetCustomTags()) {
		if t.GetCustomTags()[k] == nil {
			r.Errorf(p.Field("customTags").Key(k), "encountered null value for custom tag %q", k)
		}
	}
}

func secPrivateKeyProvider(r *Report, p Path, pkp *meshconfig.PrivateKeyProvider) {
	if pkp == nil {
		return
	}
	var delay *durationpb.Duration
	switch pr := pkp.GetProvider().(type) {
	case *meshconfig.PrivateKeyProvider_Cryptomb:
		p, delay = p.Field("cryptomb"), pr.Cryptomb.GetPollDelay()
	case *meshconfig.PrivateKeyProvider_Qat:
		p, delay = p.Field("qat"), pr.Qat.GetPollDelay()
	default:
		r.Errorf(p, "private key provider configuration is required (cryptomb or qat)")
		return
	}
	if delay == nil {
		r.Errorf(p.Field("pollDelay"), "pollDelay is required")
	} else if delay.AsDuration() <= 0 {
		r.Errorf(p.Field("pollDelay"), "pollDelay must be positive")
	}
}

// ValidateMeshNetworks checks a meshNetworks configuration.
func ValidateMeshNetworks(mn *meshconfig.MeshNetworks) error {
	return ValidateMeshNetworksWith(mn, true)
}

// ValidateMeshNetworksWith is ValidateMeshNetworks; a gateway address may
// be a hostname only with hostnames (Istio's RESOLVE_HOSTNAME_GATEWAYS).
func ValidateMeshNetworksWith(mn *meshconfig.MeshNetworks, hostnames bool) error {
	r := &Report{}
	for _, name := range secSortedKeys(mn.GetNetworks()) {
		p := Path("networks").Key(name)
		nw := mn.GetNetworks()[name]
		if nw == nil {
			r.Errorf(p, "network must not be null")
			continue
		}
		for i, ep := range nw.GetEndpoints() {
			secNetworkEndpoint(r, p.Field("endpoints").Index(i), ep)
		}
		for i, gw := range nw.GetGateways() {
			secNetworkGateway(r, p.Field("gateways").Index(i), gw, hostnames)
		}
	}
	_, err := r.Result()
	return err
}

func secNetworkEndpoint(r *Report, p Path, ep *meshconfig.Network_NetworkEndpoints) {
	switch e := ep.GetNe().(type) {
	case *meshconfig.Network_NetworkEndpoints_FromCidr:
		if e.FromCidr == "" {
			r.Errorf(p.Field("fromCidr"), "fromCidr must not be empty")
		} else if err := CheckIPOrCIDR(e.FromCidr); err != nil {
			r.Errorf(p.Field("fromCidr"), "%v", err)
		}
	case *meshconfig.Network_NetworkEndpoints_FromRegistry:
		if err := CheckDNS1123Label(e.FromRegistry); err != nil {
			r.Errorf(p.Field("fromRegistry"), "invalid registry name: %v", err)
		}
	default:
		r.Errorf(p, "endpoint must set exactly one of fromCidr or fromRegistry")
	}
}

func secNetworkGateway(r *Report, p Path, gw *meshconfig.Network_IstioNetworkGateway, hostnames bool) {
	if gw == nil {
		r.Errorf(p, "gateway must not be null")
		return
	}
	switch g := gw.GetGw().(type) {
	case *meshconfig.Network_IstioNetworkGateway_RegistryServiceName:
		r.Add(p.Field("registryServiceName"), CheckFQDN(g.RegistryServiceName))
	case *meshconfig.Network_IstioNetworkGateway_Address:
		if _, err := netip.ParseAddr(g.Address); err != nil {
			if !hostnames {
				r.Errorf(p.Field("address"), "%q is not a valid IP address (hostname is allowed if RESOLVE_HOSTNAME_GATEWAYS is enabled)", g.Address)
			} else if CheckFQDN(g.Address) != nil {
				r.Errorf(p.Field("address"), "%q is not a valid IP address or DNS name", g.Address)
			}
		}
	default:
		r.Errorf(p, "gateway must set exactly one of address or registryServiceName")
	}
	r.Add(p.Field("port"), CheckPort(gw.GetPort()))
}

// secExtensionProviders checks the extension providers. Duplicate names are
// errors; every other problem is a warning, as Istio only logs providers it
// cannot use and ignores them unless a policy refers to them.
func secExtensionProviders(r *Report, providers []*meshconfig.MeshConfig_ExtensionProvider) {
	seen := map[string]int{}
	for i, ep := range providers {
		p := Path("extensionProviders").Index(i)
		if ep == nil {
			r.Warnf(p, "%s: extension provider must not be null", meshProviderNote)
			continue
		}
		name := ep.GetName()
		if j, dup := seen[name]; dup && name != "" {
			r.Errorf(p.Field("name"), "duplicate extension provider name %s (first defined at extensionProviders[%d])", name, j)
		} else {
			seen[name] = i
		}
		for _, err := range secProviderProblems(ep) {
			r.Warnf(p, "%s: invalid extension provider %s: %v", meshProviderNote, name, err)
		}
	}
}

// secProviderProblems lists what is wrong with one extension provider.
func secProviderProblems(ep *meshconfig.MeshConfig_ExtensionProvider) []error {
	var errs []error
	add := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	remote := func(service string, port uint32) {
		add(secProviderService(service))
		add(CheckPort(port))
	}
	if ep.GetName() == "" {
		add(errorfSec("empty extension provider name"))
	}
	switch pr := ep.GetProvider().(type) {
	case *meshconfig.MeshConfig_ExtensionProvider_EnvoyExtAuthzHttp:
		c := pr.EnvoyExtAuthzHttp
		remote(c.GetService(), c.GetPort())
		add(secStatusOnError(c.GetStatusOnError()))
		if pp := c.GetPathPrefix(); pp != "" && !strings.HasPrefix(pp, "/") {
			add(errorfSec("pathPrefix should begin with `/` but found %q", pp))
		}
		if c.GetTimeout() != nil {
			add(CheckDuration(c.GetTimeout()))
		}
	case *meshconfig.MeshConfig_ExtensionProvider_EnvoyExtAuthzGrpc:
		c := pr.EnvoyExtAuthzGrpc
		remote(c.GetService(), c.GetPort())
		add(secStatusOnError(c.GetStatusOnError()))
		if c.GetTimeout() != nil {
			add(CheckDuration(c.GetTimeout()))
		}
	case *meshconfig.MeshConfig_ExtensionProvider_Zipkin:
		remote(pr.Zipkin.GetService(), pr.Zipkin.GetPort())
	case *meshconfig.MeshConfig_ExtensionProvider_Lightstep:
		remote(pr.Lightstep.GetService(), pr.Lightstep.GetPort())
		if pr.Lightstep.GetAccessToken() == "" {
			add(errorfSec("access token is required"))
		}
	case *meshconfig.MeshConfig_ExtensionProvider_Datadog:
		remote(pr.Datadog.GetService(), pr.Datadog.GetPort())
	case *meshconfig.MeshConfig_ExtensionProvider_Opencensus:
		remote(pr.Opencensus.GetService(), pr.Opencensus.GetPort())
	case *meshconfig.MeshConfig_ExtensionProvider_Skywalking:
		remote(pr.Skywalking.GetService(), pr.Skywalking.GetPort())
	case *meshconfig.MeshConfig_ExtensionProvider_Opentelemetry:
		remote(pr.Opentelemetry.GetService(), pr.Opentelemetry.GetPort())
		if pr.Opentelemetry.GetGrpc() != nil && pr.Opentelemetry.GetHttp() != nil {
			add(errorfSec("OpenTelemetryTracingProvider cannot specify both grpc and http"))
		}
	case *meshconfig.MeshConfig_ExtensionProvider_EnvoyHttpAls:
		remote(pr.EnvoyHttpAls.GetService(), pr.EnvoyHttpAls.GetPort())
	case *meshconfig.MeshConfig_ExtensionProvider_EnvoyTcpAls:
		remote(pr.EnvoyTcpAls.GetService(), pr.EnvoyTcpAls.GetPort())
	case *meshconfig.MeshConfig_ExtensionProvider_EnvoyOtelAls:
		remote(pr.EnvoyOtelAls.GetService(), pr.EnvoyOtelAls.GetPort())
	case *meshconfig.MeshConfig_ExtensionProvider_Sds:
		remote(pr.Sds.GetService(), pr.Sds.GetPort())
	case *meshconfig.MeshConfig_ExtensionProvider_Prometheus,
		*meshconfig.MeshConfig_ExtensionProvider_Stackdriver,
		*meshconfig.MeshConfig_ExtensionProvider_EnvoyFileAccessLog:
	default:
		add(errorfSec("no provider type is set"))
	}
	return errs
}

// secProviderService accepts an FQDN, an IP or "namespace/host".
func secProviderService(service string) error {
	if service == "" {
		return errorfSec("service must not be empty")
	}
	if strings.Contains(service, "/") {
		return CheckNamespacedHost(service)
	}
	if _, err := netip.ParseAddr(service); err == nil {
		return nil
	}
	if err := CheckFQDN(service); err != nil {
		return errorfSec("invalid service %q: %v", service, err)
	}
	return nil
}

// secStatusOnError requires an HTTP status code when set.
func secStatusOnError(status string) error {
	if status == "" {
		return nil
	}
	code, err := strconv.Atoi(status)
	if err != nil || http.StatusText(code) == "" {
		return errorfSec("invalid statusOnError value %q: must be an HTTP status code", status)
	}
	return nil
}
