package validation

import (
	"fmt"
	"math"
	"strings"

	networking "istio.io/api/networking/v1alpha3"

	"github.com/meshplane/istiod/pkg/config"
)

// ValidateDestinationRule checks a DestinationRule.
func ValidateDestinationRule(cfg config.Config) (Warning, error) {
	dr, ok := cfg.Spec.(*networking.DestinationRule)
	if !ok {
		return nil, netCannotCast("DestinationRule", cfg.Spec)
	}
	if dr == nil {
		dr = &networking.DestinationRule{}
	}
	r := &Report{}
	spec := Path("spec")
	if dr.GetHost() == "" {
		r.Errorf(spec.Field("host"), "empty domain name not allowed (host is required)")
	} else if err := netCheckWildcardHost(dr.GetHost()); err != nil {
		r.Errorf(spec.Field("host"), "invalid host %q: %v", dr.GetHost(), err)
	}
	drCheckTrafficPolicy(r, spec.Field("trafficPolicy"), dr.GetTrafficPolicy(), cfg.Namespace)
	names := map[string]bool{}
	for i, s := range dr.GetSubsets() {
		sp := spec.Field("subsets").Index(i)
		if s == nil {
			r.Errorf(sp, "subset may not be null")
			continue
		}
		switch {
		case s.GetName() == "":
			r.Errorf(sp.Field("name"), "subset name cannot be empty")
		case !netIsLabel(s.GetName()):
			r.Errorf(sp.Field("name"), "subset name is invalid: %s (must be a DNS-1123 label)", s.GetName())
		}
		if names[s.GetName()] {
			r.Errorf(sp.Field("name"), "duplicate subset names: %s", s.GetName())
		}
		names[s.GetName()] = true
		r.Add(sp.Field("labels"), CheckLabels(s.GetLabels()))
		drCheckTrafficPolicy(r, sp.Field("trafficPolicy"), s.GetTrafficPolicy(), cfg.Namespace)
	}
	checkExportTo(r, spec.Field("exportTo"), cfg.Namespace, dr.GetExportTo(), false, dr.GetWorkloadSelector() != nil)
	netCheckTypeSelector(r, spec.Field("workloadSelector"), dr.GetWorkloadSelector())
	return r.Result()
}

// drCheckTrafficPolicy validates a traffic policy (top level or subset).
func drCheckTrafficPolicy(r *Report, p Path, tp *networking.TrafficPolicy, ns string) {
	if tp == nil {
		return
	}
	if tp.GetOutlierDetection() == nil && tp.GetConnectionPool() == nil && tp.GetLoadBalancer() == nil &&
		tp.GetTls() == nil && tp.GetPortLevelSettings() == nil && tp.GetTunnel() == nil &&
		tp.GetProxyProtocol() == nil && tp.GetRetryBudget() == nil {
		r.Errorf(p, "traffic policy must have at least one field")
		return
	}
	if tp.GetTunnel() != nil && tp.GetProxyProtocol() != nil {
		r.Errorf(p, "tunnel and proxyProtocol must not be set together")
	}
	drCheckOutlier(r, p.Field("outlierDetection"), tp.GetOutlierDetection())
	netCheckConnectionPool(r, p.Field("connectionPool"), tp.GetConnectionPool())
	drCheckLoadBalancer(r, p.Field("loadBalancer"), tp.GetLoadBalancer(), tp.GetOutlierDetection())
	drCheckClientTLS(r, p.Field("tls"), tp.GetTls(), ns)
	drCheckPortPolicies(r, p.Field("portLevelSettings"), tp.GetPortLevelSettings(), ns)
	if t := tp.GetTunnel(); t != nil {
		tnp := p.Field("tunnel")
		if t.GetProtocol() != "" && t.GetProtocol() != "CONNECT" && t.GetProtocol() != "POST" {
			r.Errorf(tnp.Field("protocol"), `tunnel protocol must be "CONNECT" or "POST"`)
		}
		if fqdnErr, ipErr := netCheckFQDN(t.GetTargetHost()), netCheckIP(t.GetTargetHost()); fqdnErr != nil && ipErr != nil {
			r.Errorf(tnp.Field("targetHost"), "tunnel target host must be valid FQDN or IP address: %s; %s", fqdnErr, ipErr)
		}
		if err := CheckPort(t.GetTargetPort()); err != nil {
			r.Errorf(tnp.Field("targetPort"), "tunnel target port is invalid: %s", err)
		}
	}
	if pp := tp.GetProxyProtocol(); pp != nil {
		if _, ok := networking.TrafficPolicy_ProxyProtocol_VERSION_name[int32(pp.GetVersion())]; !ok {
			r.Errorf(p.Field("proxyProtocol").Field("version"), "proxy protocol version is invalid: %d", pp.GetVersion())
		}
	}
	if rb := tp.GetRetryBudget(); rb != nil {
		rp := p.Field("retryBudget")
		if rb.GetPercent() != nil {
			r.Add(rp.Field("percent"), CheckPercent(rb.GetPercent().GetValue()))
		}
		r.Add(rp.Field("budgetInterval"), CheckNonNegativeDuration(rb.GetBudgetInterval()))
	}
}

// drCheckPortPolicies validates port level settings: a port is required,
// unique, and at least one setting must be present.
func drCheckPortPolicies(r *Report, p Path, pls []*networking.TrafficPolicy_PortTrafficPolicy, ns string) {
	seen := map[uint32]bool{}
	for i, pl := range pls {
		pp := p.Index(i)
		if pl == nil {
			r.Errorf(pp, "traffic policy may not be null")
			continue
		}
		if pl.GetPort() == nil {
			r.Errorf(pp.Field("port"), "portTrafficPolicy must have valid port")
		} else {
			n := pl.GetPort().GetNumber()
			r.Add(pp.Field("port").Field("number"), CheckPort(n))
			if seen[n] {
				r.Errorf(pp.Field("port"), "duplicate port %d in portLevelSettings", n)
			}
			seen[n] = true
		}
		if pl.GetOutlierDetection() == nil && pl.GetConnectionPool() == nil && pl.GetLoadBalancer() == nil && pl.GetTls() == nil {
			r.Errorf(pp, "port traffic policy must have at least one field")
			continue
		}
		drCheckOutlier(r, pp.Field("outlierDetection"), pl.GetOutlierDetection())
		netCheckConnectionPool(r, pp.Field("connectionPool"), pl.GetConnectionPool())
		drCheckLoadBalancer(r, pp.Field("loadBalancer"), pl.GetLoadBalancer(), pl.GetOutlierDetection())
		drCheckClientTLS(r, pp.Field("tls"), pl.GetTls(), ns)
	}
}

func drCheckOutlier(r *Report, p Path, o *networking.OutlierDetection) {
	if o == nil {
		return
	}
	//nolint:staticcheck // the deprecated field is still accepted
	if ce := o.GetConsecutiveErrors(); ce < 0 {
		r.Errorf(p.Field("consecutiveErrors"), "consecutiveErrors must be non-negative")
	} else if ce != 0 {
		r.Warnf(p.Field("consecutiveErrors"), "outlier detection consecutive errors is deprecated, use consecutiveGatewayErrors or consecutive5xxErrors instead")
	}
	if !o.GetSplitExternalLocalOriginErrors() && o.GetConsecutiveLocalOriginFailures().GetValue() > 0 {
		r.Errorf(p.Field("consecutiveLocalOriginFailures"), "outlier detection consecutive local origin failures is specified, but split external local origin errors is set to false")
	}
	if o.GetInterval() != nil {
		r.Add(p.Field("interval"), netCheckDuration(o.GetInterval()))
	}
	if o.GetBaseEjectionTime() != nil {
		r.Add(p.Field("baseEjectionTime"), netCheckDuration(o.GetBaseEjectionTime()))
	}
	r.Add(p.Field("maxEjectionPercent"), CheckPercent(float64(o.GetMaxEjectionPercent())))
	r.Add(p.Field("minHealthPercent"), CheckPercent(float64(o.GetMinHealthPercent())))
}

// netCheckConnectionPool validates connection pool settings (DestinationRule
// and Sidecar ingress).
func netCheckConnectionPool(r *Report, p Path, cp *networking.ConnectionPoolSettings) {
	if cp == nil {
		return
	}
	if cp.GetHttp() == nil && cp.GetTcp() == nil {
		r.Errorf(p, "connection pool must have at least one field")
		return
	}
	if h := cp.GetHttp(); h != nil {
		hp := p.Field("http")
		for _, f := range []struct {
			name, what string
			v          int32
		}{
			{"http1MaxPendingRequests", "http1 max pending requests", h.GetHttp1MaxPendingRequests()},
			{"http2MaxRequests", "http2 max requests", h.GetHttp2MaxRequests()},
			{"maxRequestsPerConnection", "max requests per connection", h.GetMaxRequestsPerConnection()},
			{"maxRetries", "max retries", h.GetMaxRetries()},
			{"maxConcurrentStreams", "max concurrent streams", h.GetMaxConcurrentStreams()},
		} {
			if f.v < 0 {
				r.Errorf(hp.Field(f.name), "%s must be non-negative", f.what)
			}
		}
		if h.GetIdleTimeout() != nil {
			r.Add(hp.Field("idleTimeout"), netCheckDuration(h.GetIdleTimeout()))
		}
		if h.GetH2UpgradePolicy() == networking.ConnectionPoolSettings_HTTPSettings_UPGRADE && h.GetUseClientProtocol() {
			r.Errorf(hp.Field("useClientProtocol"), "use client protocol must not be true when H2UpgradePolicy is UPGRADE")
		}
		if ka := h.GetHttp2KeepAlive(); ka != nil {
			kp := hp.Field("http2KeepAlive")
			if ka.GetInterval() == nil {
				r.Errorf(kp.Field("interval"), "http2 keepalive interval is required")
			} else {
				r.Add(kp.Field("interval"), netCheckDuration(ka.GetInterval()))
			}
			if ka.GetTimeout() == nil {
				r.Errorf(kp.Field("timeout"), "http2 keepalive timeout is required")
			} else {
				r.Add(kp.Field("timeout"), netCheckDuration(ka.GetTimeout()))
			}
		}
	}
	if t := cp.GetTcp(); t != nil {
		tp := p.Field("tcp")
		if t.GetMaxConnections() < 0 {
			r.Errorf(tp.Field("maxConnections"), "max connections must be non-negative")
		}
		if t.GetConnectTimeout() != nil {
			r.Add(tp.Field("connectTimeout"), netCheckDuration(t.GetConnectTimeout()))
		}
		if t.GetMaxConnectionDuration() != nil {
			r.Add(tp.Field("maxConnectionDuration"), netCheckDuration(t.GetMaxConnectionDuration()))
		}
		// 0s disables the idle timeout
		if it := t.GetIdleTimeout(); it != nil && it.AsDuration() != 0 {
			r.Add(tp.Field("idleTimeout"), netCheckDuration(it))
		}
		if ka := t.GetTcpKeepalive(); ka != nil {
			if ka.GetTime() != nil {
				r.Add(tp.Field("tcpKeepalive").Field("time"), netCheckDuration(ka.GetTime()))
			}
			if ka.GetInterval() != nil {
				r.Add(tp.Field("tcpKeepalive").Field("interval"), netCheckDuration(ka.GetInterval()))
			}
		}
	}
}

// drMaxRingSize is Envoy's upper bound for ring hash sizes.
const drMaxRingSize = 8 * 1024 * 1024

func drCheckLoadBalancer(r *Report, p Path, lb *networking.LoadBalancerSettings, od *networking.OutlierDetection) {
	if lb == nil {
		return
	}
	if _, ok := lb.GetLbPolicy().(*networking.LoadBalancerSettings_Simple); ok {
		if _, known := networking.LoadBalancerSettings_SimpleLB_name[int32(lb.GetSimple())]; !known {
			r.Errorf(p.Field("simple"), "unknown load balancer %d", lb.GetSimple())
		}
	}
	if ch := lb.GetConsistentHash(); ch != nil {
		drCheckConsistentHash(r, p.Field("consistentHash"), ch)
	}
	if lb.GetLocalityLbSetting() != nil && lb.GetZoneAwareLbSetting() != nil {
		r.Errorf(p, "only one of localityLbSetting and zoneAwareLbSetting can be set")
	}
	drCheckLocality(r, p.Field("localityLbSetting"), lb.GetLocalityLbSetting(), od)
	drCheckZoneAware(r, p.Field("zoneAwareLbSetting"), lb.GetZoneAwareLbSetting(), od)
	if lb.GetWarmupDurationSecs() != nil {
		r.Add(p.Field("warmupDurationSecs"), netCheckDuration(lb.GetWarmupDurationSecs()))
	}
	if w := lb.GetWarmup(); w != nil {
		wp := p.Field("warmup")
		if w.GetDuration() == nil {
			r.Errorf(wp.Field("duration"), "duration is required")
		} else {
			r.Add(wp.Field("duration"), netCheckDuration(w.GetDuration()))
		}
		if v := w.GetMinimumPercent().GetValue(); v > 100 {
			r.Errorf(wp.Field("minimumPercent"), "minimumPercent value should be less than or equal to 100")
		} else if v < 0 {
			r.Add(wp.Field("minimumPercent"), CheckPercent(v))
		}
		if w.GetAggression() != nil && w.GetAggression().GetValue() <= 0 {
			r.Errorf(wp.Field("aggression"), "aggression should be greater than 0")
		}
	}
}

func drCheckConsistentHash(r *Report, p Path, ch *networking.LoadBalancerSettings_ConsistentHashLB) {
	switch k := ch.GetHashKey().(type) {
	case nil:
		r.Warnf(p, "consistentHash sets no hash key (httpHeaderName, httpCookie, useSourceIp or httpQueryParameterName); requests will be spread randomly")
	case *networking.LoadBalancerSettings_ConsistentHashLB_HttpHeaderName:
		r.Add(p.Field("httpHeaderName"), netCheckHeaderName(k.HttpHeaderName))
	case *networking.LoadBalancerSettings_ConsistentHashLB_HttpCookie:
		cp := p.Field("httpCookie")
		if k.HttpCookie.GetName() == "" {
			r.Errorf(cp.Field("name"), "name required for HttpCookie")
		}
		r.Add(cp.Field("ttl"), CheckNonNegativeDuration(k.HttpCookie.GetTtl()))
		attrs := map[string]bool{}
		for i, a := range k.HttpCookie.GetAttributes() {
			switch {
			case a.GetName() == "":
				r.Errorf(cp.Field("attributes").Index(i).Field("name"), "cookie attribute name cannot be empty")
			case attrs[a.GetName()]:
				r.Errorf(cp.Field("attributes").Index(i).Field("name"), "duplicate cookie attribute name: %s", a.GetName())
			}
			attrs[a.GetName()] = true
		}
	case *networking.LoadBalancerSettings_ConsistentHashLB_HttpQueryParameterName:
		if k.HttpQueryParameterName == "" {
			r.Errorf(p.Field("httpQueryParameterName"), "httpQueryParameterName must not be empty")
		}
	}
	//nolint:staticcheck // the deprecated field is still accepted
	if ch.GetMinimumRingSize() != 0 {
		r.Warnf(p.Field("minimumRingSize"), "consistent hash MinimumRingSize is deprecated, use ConsistentHashLB's RingHash configuration instead")
		if ch.GetHashAlgorithm() != nil {
			r.Errorf(p, "only one of MinimumRingSize or Maglev/Ringhash can be specified")
		}
		if ch.GetMinimumRingSize() > drMaxRingSize { //nolint:staticcheck
			r.Errorf(p.Field("minimumRingSize"), "minimumRingSize must be at most %d", drMaxRingSize)
		}
	}
	if rh := ch.GetRingHash(); rh != nil && rh.GetMinimumRingSize() > drMaxRingSize {
		r.Errorf(p.Field("ringHash").Field("minimumRingSize"), "minimumRingSize must be at most %d", drMaxRingSize)
	}
	if ml := ch.GetMaglev(); ml != nil {
		mp := p.Field("maglev").Field("tableSize")
		switch ts := ml.GetTableSize(); {
		case ts == 0:
			r.Errorf(mp, "tableSize must be set for maglev")
		case ts >= 5000011:
			r.Errorf(mp, "tableSize must be less than 5000011 for maglev")
		case !drIsPrime(ts):
			r.Errorf(mp, "tableSize must be a prime number for maglev")
		}
	}
}

// drIsPrime is Envoy's primality test, which takes 1 for a prime.
func drIsPrime(x uint64) bool {
	if x == 0 {
		return false
	}
	if x < 4 {
		return true
	}
	if x%2 == 0 {
		return false
	}
	limit := uint64(math.Sqrt(float64(x)))
	for f := uint64(3); f <= limit; f += 2 {
		if x%f == 0 {
			return false
		}
	}
	return true
}

// drCheckLocality validates locality load balancing: distribute weights per
// source add up to 100, distribute and failover are exclusive.
func drCheckLocality(r *Report, p Path, l *networking.LocalityLoadBalancerSetting, od *networking.OutlierDetection) {
	if l == nil {
		return
	}
	if len(l.GetDistribute()) > 0 && len(l.GetFailover()) > 0 {
		r.Errorf(p, "can not simultaneously specify 'distribute' and 'failover'")
		return
	}
	if len(l.GetFailover()) > 0 {
		for i, label := range l.GetFailoverPriority() {
			switch strings.SplitN(label, "=", 2)[0] {
			case "topology.kubernetes.io/region", "topology.kubernetes.io/zone", "topology.istio.io/subzone":
				r.Errorf(p.Field("failoverPriority").Index(i), "can not simultaneously set 'failover' and topology label '%s' in 'failover_priority'", label)
			}
		}
	}
	var from []string
	for i, d := range l.GetDistribute() {
		dp := p.Field("distribute").Index(i)
		from = append(from, d.GetFrom())
		var total uint64
		for _, loc := range netSortedKeys(d.GetTo()) {
			if w := d.GetTo()[loc]; w < 1 || w > 100 {
				r.Errorf(dp.Field("to").Key(loc), "locality weight must be in range [1, 100]")
			}
			total += uint64(d.GetTo()[loc])
		}
		if total != 100 {
			r.Errorf(dp.Field("to"), "total locality weight %d != 100", total)
		}
		r.Add(dp.Field("to"), drCheckLocalities(netSortedKeys(d.GetTo())))
	}
	r.Add(p.Field("distribute"), drCheckLocalities(from))
	if (len(l.GetFailover()) > 0 || len(l.GetFailoverPriority()) > 0) && od == nil {
		r.Warnf(p, "outlier detection policy must be provided for failover")
	}
	for i, f := range l.GetFailover() {
		fp := p.Field("failover").Index(i)
		if f.GetFrom() == f.GetTo() {
			r.Errorf(fp, "locality lb failover settings must specify different regions")
		}
		if strings.Contains(f.GetFrom(), "/") || strings.Contains(f.GetTo(), "/") {
			r.Errorf(fp, "locality lb failover only specify region")
		}
		if strings.Contains(f.GetFrom(), "*") || strings.Contains(f.GetTo(), "*") {
			r.Errorf(fp, "locality lb failover region should not contain '*' wildcard")
		}
	}
}

// drCheckLocalities validates region[/zone[/subzone]] localities: a single
// trailing '*' at most, no empty parts and no overlap between entries.
func drCheckLocalities(locs []string) error {
	for i, l := range locs {
		if n := strings.Count(l, "*"); n > 1 || (n == 1 && !strings.HasSuffix(l, "*")) {
			return fmt.Errorf("locality %s wildcard '*' number can not exceed 1 and must be in the end", l)
		}
		for _, part := range strings.SplitN(l, "/", 3) {
			if part == "" {
				return fmt.Errorf("locality %s must not contain empty region/zone/subzone info", l)
			}
		}
		for _, o := range locs[:i] {
			if drLocalityCovers(o, l) || drLocalityCovers(l, o) {
				return fmt.Errorf("locality %s overlap with previous specified ones", l)
			}
		}
	}
	return nil
}

// drLocalityCovers reports whether locality a includes locality b.
func drLocalityCovers(a, b string) bool {
	if a == b || a == "*" {
		return true
	}
	if prefix, ok := strings.CutSuffix(a, "*"); ok {
		return strings.HasPrefix(b, prefix)
	}
	return strings.HasPrefix(b, a+"/")
}

// drCheckClientTLS validates upstream TLS settings.
func drCheckClientTLS(r *Report, p Path, t *networking.ClientTLSSettings, ns string) {
	if t == nil {
		return
	}
	mode := t.GetMode()
	if _, ok := networking.ClientTLSSettings_TLSmode_name[int32(mode)]; !ok {
		r.Errorf(p.Field("mode"), "unknown TLS mode %d", mode)
	}
	files := t.GetClientCertificate() != "" || t.GetPrivateKey() != "" || t.GetCaCertificates() != "" || t.GetCaCrl() != ""
	switch mode {
	case networking.ClientTLSSettings_DISABLE:
		if files || t.GetCredentialName() != "" || len(t.GetSubjectAltNames()) > 0 || t.GetSni() != "" {
			r.Warnf(p, "TLS mode DISABLE ignores certificates, credentialName, subjectAltNames and sni")
		}
		return
	case networking.ClientTLSSettings_ISTIO_MUTUAL:
		if files || t.GetCredentialName() != "" {
			r.Warnf(p, "TLS mode ISTIO_MUTUAL uses Istio certificates; clientCertificate, privateKey, caCertificates, caCrl and credentialName are ignored")
		}
		return
	}
	drCheckCredentialName(r, p.Field("credentialName"), t.GetCredentialName(), ns)
	if t.GetInsecureSkipVerify().GetValue() {
		if mode == networking.ClientTLSSettings_SIMPLE && (t.GetCaCertificates() != "" || t.GetCredentialName() != "" || t.GetSubjectAltNames() != nil) {
			r.Errorf(p, "cannot specify CaCertificates or CredentialName or SubjectAltNames when InsecureSkipVerify is set true")
		}
		if mode == networking.ClientTLSSettings_MUTUAL && (t.GetCaCertificates() != "" || t.GetSubjectAltNames() != nil) {
			r.Errorf(p, "cannot specify CaCertificates or SubjectAltNames when InsecureSkipVerify is set true")
		}
	}
	if t.GetCredentialName() != "" {
		if files {
			r.Errorf(p, "cannot specify client certificates or CA certificate or CA CRL If credentialName is set")
		}
		return
	}
	if mode == networking.ClientTLSSettings_MUTUAL {
		if t.GetClientCertificate() == "" {
			r.Errorf(p.Field("clientCertificate"), "client certificate required for mutual tls")
		}
		if t.GetPrivateKey() == "" {
			r.Errorf(p.Field("privateKey"), "private key required for mutual tls")
		}
	}
}

// drCheckCredentialName checks a configmap:// credential reference:
// configmap://<namespace>/<name>, in the object's own namespace.
func drCheckCredentialName(r *Report, p Path, name, ns string) {
	rest, ok := strings.CutPrefix(name, "configmap://")
	if !ok {
		return
	}
	parts := strings.Split(rest, "/")
	var bad string
	switch {
	case len(parts) < 2:
		bad = "Expected namespace and name"
	case parts[0] == "":
		bad = "Expected namespace"
	case parts[1] == "":
		bad = "Expected name"
	}
	if bad != "" {
		r.Errorf(p, "invalid configmap:// credentialName: invalid resource name %q. %s", name, bad)
		return
	}
	if ns == "" || parts[0] != ns {
		r.Errorf(p, "invalid configmap:// credentialName: namespace must match the configuration namespace %q", ns)
	}
}

// drCheckZoneAware validates zone aware load balancing: failover orders
// regions only, and failoverPriority may not name the topology labels
// (zone and subzone routing are implicit).
func drCheckZoneAware(r *Report, p Path, z *networking.ZoneAwareLoadBalancerSetting, od *networking.OutlierDetection) {
	if z == nil {
		return
	}
	for i, label := range z.GetFailoverPriority() {
		switch label {
		case "topology.kubernetes.io/region", "topology.kubernetes.io/zone", "topology.istio.io/subzone":
			r.Errorf(p.Field("failoverPriority").Index(i), "'failover_priority' for zone aware lb must not use topology label '%s'; "+
				"region- and zone-level routing are handled automatically", label)
		}
	}
	if (len(z.GetFailover()) > 0 || len(z.GetFailoverPriority()) > 0) && od == nil {
		r.Warnf(p, "outlier detection policy must be provided for failover")
	}
	for i, f := range z.GetFailover() {
		fp := p.Field("failover").Index(i)
		if f.GetFrom() == f.GetTo() {
			r.Errorf(fp, "zone aware lb failover settings must specify different regions")
		}
		if strings.Contains(f.GetFrom(), "/") || strings.Contains(f.GetTo(), "/") {
			r.Errorf(fp, "zone aware lb failover only specifies region; zone and subzone failover are handled automatically")
		}
		if strings.Contains(f.GetFrom(), "*") || strings.Contains(f.GetTo(), "*") {
			r.Errorf(fp, "zone aware lb failover region should not contain '*' wildcard")
		}
	}
}
