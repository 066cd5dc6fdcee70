package validation

import (
	"fmt"
	"net"
	"strconv"
	"strings"

	networking "istio.io/api/networking/v1alpha3"

	"github.com/meshplane/istiod/pkg/config"
)

// ValidateSidecar checks a Sidecar.
func ValidateSidecar(cfg config.Config) (Warning, error) {
	sc, ok := cfg.Spec.(*networking.Sidecar)
	if !ok {
		return nil, netCannotCast("Sidecar", cfg.Spec)
	}
	if sc == nil {
		sc = &networking.Sidecar{}
	}
	r := &Report{}
	spec := Path("spec")
	netCheckAlphaSelector(r, spec.Field("workloadSelector"), sc.GetWorkloadSelector(), "sidecar")
	if len(sc.GetEgress()) == 0 && len(sc.GetIngress()) == 0 && sc.GetOutboundTrafficPolicy() == nil &&
		sc.GetInboundConnectionPool() == nil {
		r.Errorf(spec, "sidecar: empty configuration provided")
	}
	ports := map[uint32]bool{}
	for i, in := range sc.GetIngress() {
		scCheckIngress(r, spec.Field("ingress").Index(i), in, ports)
	}
	netCheckConnectionPool(r, spec.Field("inboundConnectionPool"), sc.GetInboundConnectionPool())
	scCheckEgress(r, spec.Field("egress"), sc.GetEgress(), cfg.Namespace)
	scCheckOutboundPolicy(r, spec.Field("outboundTrafficPolicy"), sc.GetOutboundTrafficPolicy())
	return r.Result()
}

// scCheckIngress validates one ingress listener: port (unique), bind,
// defaultEndpoint, TLS and connection pool.
func scCheckIngress(r *Report, p Path, in *networking.IstioIngressListener, ports map[uint32]bool) {
	if in == nil {
		r.Errorf(p, "sidecar: ingress may not be null")
		return
	}
	port := in.GetPort()
	if port == nil {
		r.Errorf(p.Field("port"), "sidecar: port is required for ingress listeners")
		return
	}
	scCheckPort(r, p.Field("port"), port)
	r.Add(p.Field("port").Field("number"), CheckPort(port.GetNumber()))
	if in.GetBind() != "" {
		r.Add(p.Field("bind"), netCheckIP(in.GetBind()))
	}
	if ports[port.GetNumber()] {
		r.Errorf(p.Field("port").Field("number"), "sidecar: ports on IP bound listeners must be unique (duplicate %d)", port.GetNumber())
	}
	ports[port.GetNumber()] = true
	scCheckCaptureMode(r, p.Field("captureMode"), in.GetCaptureMode())
	if ep := in.GetDefaultEndpoint(); ep != "" {
		r.Add(p.Field("defaultEndpoint"), scCheckDefaultEndpoint(ep))
	}
	if t := in.GetTls(); t != nil {
		tp := p.Field("tls")
		if len(t.GetSubjectAltNames()) > 0 {
			r.Errorf(tp.Field("subjectAltNames"), "sidecar: subjectAltNames is not supported in ingress tls")
		}
		if t.GetHttpsRedirect() {
			r.Errorf(tp.Field("httpsRedirect"), "sidecar: httpsRedirect is not supported")
		}
		if t.GetCredentialName() != "" {
			r.Errorf(tp.Field("credentialName"), "sidecar: credentialName is not currently supported")
		}
		if len(t.GetCredentialNames()) > 0 {
			r.Errorf(tp.Field("credentialNames"), "sidecar: credentialNames is not currently supported")
		}
		if len(t.GetTlsCertificates()) > 0 {
			r.Errorf(tp.Field("tlsCertificates"), "sidecar: tls_certificates is not currently supported")
		}
		if m := t.GetMode(); m == networking.ServerTLSSettings_ISTIO_MUTUAL || m == networking.ServerTLSSettings_AUTO_PASSTHROUGH {
			r.Errorf(tp.Field("mode"), "configuration is invalid: cannot set mode to %s in sidecar ingress tls", m)
		}
		if !netProtoIsTLS(port.GetProtocol()) {
			r.Errorf(tp, "server cannot have TLS settings for non HTTPS/TLS ports")
		}
		netCheckServerTLS(r, tp, t)
	}
	netCheckConnectionPool(r, p.Field("connectionPool"), in.GetConnectionPool())
	if in.GetConnectionPool().GetHttp() != nil && !netProtoIsHTTP(port.GetProtocol()) {
		r.Warnf(p.Field("connectionPool").Field("http"),
			"sidecar: HTTP connection pool settings are configured for port %d (%q) but its protocol is not HTTP (%s); only TCP settings will apply",
			port.GetNumber(), port.GetName(), port.GetProtocol())
	}
}

// scCheckDefaultEndpoint accepts 127.0.0.1:PORT, 0.0.0.0:PORT, [::1]:PORT,
// [::]:PORT, :PORT or unix://path (Istio's messages).
func scCheckDefaultEndpoint(ep string) error {
	if rest, ok := strings.CutPrefix(ep, netUnixPrefix); ok {
		return netCheckUnixAddress(rest)
	}
	host, port, err := net.SplitHostPort(ep)
	if err != nil {
		return err
	}
	switch host {
	case "", "127.0.0.1", "0.0.0.0", "::1", "::":
	default:
		return fmt.Errorf("sidecar: defaultEndpoint must be of form 127.0.0.1:<port>,0.0.0.0:<port>,[::1]:port,[::]:port,unix://filepath or unset")
	}
	n, err := strconv.Atoi(port)
	if err != nil {
		return fmt.Errorf("sidecar: defaultEndpoint port (%s) is not a number: %v", port, err)
	}
	if n < 1 || n > 65535 {
		return fmt.Errorf("port number %d must be in the range 1..65535", n)
	}
	return nil
}

// scCheckPort validates the optional name, protocol and targetPort of a
// listener port; the number is checked by the caller.
func scCheckPort(r *Report, p Path, port *networking.SidecarPort) {
	if port.GetName() != "" {
		r.Add(p.Field("name"), netCheckPortName(port.GetName()))
	}
	r.Add(p.Field("protocol"), netCheckProtocol(port.GetProtocol()))
	//nolint:staticcheck // the deprecated field is rejected here
	if port.GetTargetPort() > 0 {
		r.Errorf(p.Field("targetPort"), "targetPort has no impact on Sidecars")
	}
}

func scCheckCaptureMode(r *Report, p Path, m networking.CaptureMode) {
	if _, ok := networking.CaptureMode_name[int32(m)]; !ok {
		r.Errorf(p, "unknown captureMode %d", m)
	}
}

// scCheckEgress validates the egress listeners: one catch-all listener
// without port at most (and it must be last), unique ports and unix
// sockets, and namespace/dnsName hosts.
func scCheckEgress(r *Report, p Path, egress []*networking.IstioEgressListener, ns string) {
	ports := map[uint32]bool{}
	sockets := map[string]bool{}
	catchAll := false
	for i, e := range egress {
		ep := p.Index(i)
		if e == nil {
			r.Errorf(ep, "sidecar: egress listener may not be null")
			continue
		}
		if e.GetPort() == nil {
			switch {
			case catchAll:
				r.Errorf(ep, "sidecar: egress can have only one listener with empty port")
			case i != len(egress)-1:
				r.Errorf(ep, "sidecar: the egress listener with empty port should be the last listener in the list")
			}
			catchAll = true
		} else {
			scCheckEgressPort(r, ep, e)
			if n := e.GetPort().GetNumber(); n == 0 {
				if sockets[e.GetBind()] {
					r.Errorf(ep.Field("bind"), "sidecar: unix domain socket values for listeners must be unique")
				}
				sockets[e.GetBind()] = true
			} else {
				if ports[n] {
					r.Errorf(ep.Field("port").Field("number"), "sidecar: ports on IP bound listeners must be unique (duplicate %d)", n)
				}
				ports[n] = true
			}
		}
		scCheckEgressHosts(r, ep.Field("hosts"), e.GetHosts(), ns)
	}
}

// scCheckEgressPort validates port, bind and captureMode of an egress
// listener. Port 0 means a unix domain socket listener.
func scCheckEgressPort(r *Report, p Path, e *networking.IstioEgressListener) {
	port := e.GetPort()
	scCheckPort(r, p.Field("port"), port)
	scCheckCaptureMode(r, p.Field("captureMode"), e.GetCaptureMode())
	bind := e.GetBind()
	if port.GetNumber() == 0 {
		if rest, ok := strings.CutPrefix(bind, netUnixPrefix); ok {
			r.Add(p.Field("bind"), netCheckUnixAddress(rest))
		} else {
			r.Errorf(p.Field("bind"), "sidecar: ports with 0 value must have a unix domain socket bind address")
		}
		if m := e.GetCaptureMode(); m != networking.CaptureMode_DEFAULT && m != networking.CaptureMode_NONE {
			r.Errorf(p.Field("captureMode"), "sidecar: captureMode must be DEFAULT/NONE for unix domain socket listeners")
		}
		return
	}
	r.Add(p.Field("port").Field("number"), CheckPort(port.GetNumber()))
	if bind != "" {
		r.Add(p.Field("bind"), netCheckIP(bind))
	}
}

// scCheckEgressHosts validates "namespace/dnsName" hosts and warns about
// duplicates and entries made redundant by "*/*".
func scCheckEgressHosts(r *Report, p Path, hosts []string, ns string) {
	if len(hosts) == 0 {
		r.Errorf(p, "sidecar: egress listener must contain at least one host")
		return
	}
	byNS := map[string]map[string]bool{}
	for i, h := range hosts {
		hp := p.Index(i)
		if err := scCheckHost(h); err != nil {
			r.Errorf(hp, "invalid egress host %q: %v", h, err)
			continue
		}
		hostNS, name, _ := strings.Cut(h, "/")
		if hostNS == "." && ns != "" {
			hostNS = ns
		}
		svcs := byNS[hostNS]
		if svcs == nil {
			svcs = map[string]bool{}
			byNS[hostNS] = svcs
		}
		if (name == "*" && len(svcs) > 0) || (name != "*" && (svcs[name] || svcs["*"])) {
			r.Warnf(hp, "duplicated egress host: %s", h)
		}
		svcs[name] = true
	}
	if byNS["*"]["*"] && len(byNS) > 1 {
		r.Warnf(p, "`*/*` host select all resources, no other hosts can be added")
	}
}

// scCheckHost validates one egress host: namespace is "*", ".", "~" or a
// DNS label; dnsName is "*", "*.suffix" or a FQDN.
func scCheckHost(h string) error {
	hostNS, name, ok := strings.Cut(h, "/")
	if !ok {
		return fmt.Errorf("host must be of form namespace/dnsName")
	}
	if hostNS == "" || name == "" {
		return fmt.Errorf("config namespace and dnsName in host entry cannot be empty")
	}
	// a namespace may be prefixed with "~" to leave it out
	if ns := strings.TrimPrefix(hostNS, "~"); ns != "" && ns != "*" && ns != "." && !netIsLabel(ns) {
		return fmt.Errorf("invalid namespace value %q in sidecar", hostNS)
	}
	return netCheckHostPart(name, false)
}

// scCheckOutboundPolicy validates the outbound traffic policy; an egress
// proxy is only allowed with ALLOW_ANY.
func scCheckOutboundPolicy(r *Report, p Path, tp *networking.OutboundTrafficPolicy) {
	if tp == nil {
		return
	}
	// the mesh's ALLOW_ANY_DYNAMIC_DNS, by number
	if tp.GetMode() == 3 {
		r.Errorf(p.Field("mode"), "sidecar: ALLOW_ANY_DYNAMIC_DNS mode is only supported in MeshConfig, not in Sidecar resource")
		return
	}
	if _, ok := networking.OutboundTrafficPolicy_Mode_name[int32(tp.GetMode())]; !ok {
		r.Errorf(p.Field("mode"), "unknown outbound traffic policy mode %d", tp.GetMode())
	}
	ep := tp.GetEgressProxy()
	if ep == nil {
		return
	}
	epp := p.Field("egressProxy")
	if tp.GetMode() != networking.OutboundTrafficPolicy_ALLOW_ANY {
		r.Errorf(epp, "sidecar: egress_proxy must be set only with ALLOW_ANY outbound_traffic_policy mode")
		return
	}
	if err := netCheckFQDN(ep.GetHost()); err != nil {
		r.Errorf(epp.Field("host"), "invalid egressProxy host %q: %v", ep.GetHost(), err)
	}
	if ep.GetPort() == nil {
		r.Errorf(epp.Field("port"), "sidecar: egress_proxy port must be non-nil")
	}
	if ep.GetSubset() != "" && !netIsLabel(ep.GetSubset()) {
		r.Errorf(epp.Field("subset"), "subset name is invalid: %s (must be a DNS-1123 label)", ep.GetSubset())
	}
	if ep.GetPort() != nil {
		r.Add(epp.Field("port").Field("number"), CheckPort(ep.GetPort().GetNumber()))
	}
}
