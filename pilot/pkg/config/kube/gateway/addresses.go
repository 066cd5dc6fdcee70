package gateway

import (
	"fmt"
	"net"
	"net/netip"
	"slices"
	"sort"
	"strconv"
	"strings"

	istio "istio.io/api/networking/v1alpha3"
	"k8s.io/apimachinery/pkg/api/meta"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// instances is what the Gateway's Services say about where it is served.
type instances struct {
	internal   []string // host:port with endpoints
	internalIP []string
	external   []string
	pending    []string // LoadBalancer Services without an address yet
	warnings   []string
	allUsable  bool
}

type stringSet map[string]struct{}

func (s stringSet) add(v ...string) {
	for _, x := range v {
		s[x] = struct{}{}
	}
}

func (s stringSet) has(v string) bool { _, ok := s[v]; return ok }

func (s stringSet) sorted() []string {
	out := make([]string, 0, len(s))
	for k := range s {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// resolveInstances looks up, for every server port, the endpoints of the
// Gateway's Services, as Istio does to decide Programmed and the addresses.
func resolveInstances(ctx Context, namespace string, services []string, servers []*istio.Server) instances {
	portSet := map[int]bool{}
	for _, s := range servers {
		portSet[int(s.GetPort().GetNumber())] = true
	}
	ports := make([]int, 0, len(portSet))
	for p := range portSet {
		ports = append(ports, p)
	}
	sort.Ints(ports)
	internal, internalIP, external, pending := stringSet{}, stringSet{}, stringSet{}, stringSet{}
	var warnings []string
	unusable := false
	for _, host := range services {
		svc := ctx.Service(host, namespace)
		if svc == nil {
			if others := ctx.ServiceNamespaces(host); len(others) > 0 {
				quoted := make([]string, len(others))
				for i, ns := range others {
					quoted[i] = `"` + ns + `"`
				}
				warnings = append(warnings, fmt.Sprintf("hostname %q not found in namespace %q, but it was found in namespace(s) %v",
					host, namespace, strings.Join(quoted, ", ")))
			} else {
				warnings = append(warnings, fmt.Sprintf("hostname %q not found", host))
			}
			unusable = true
			continue
		}
		for _, port := range ports {
			if len(svc.EndpointPorts[port]) > 0 {
				internal.add(host + ":" + strconv.Itoa(port))
				internalIP.add(svc.Addresses...)
				switch {
				case len(svc.ExternalAddresses) > 0:
					external.add(svc.ExternalAddresses...)
				case svc.Type == "LoadBalancer" && !pending.has(host):
					warnings = append(warnings, fmt.Sprintf("address pending for hostname %q", host))
					pending.add(host)
				}
				continue
			}
			if w, bad := missingPort(svc, host, port); w != "" {
				warnings = append(warnings, w)
				unusable = unusable || bad
			}
		}
	}
	sort.Strings(warnings)
	return instances{internal: internal.sorted(), internalIP: internalIP.sorted(), external: external.sorted(),
		pending: pending.sorted(), warnings: warnings, allUsable: !unusable}
}

// missingPort explains why port of svc has no endpoints; bad means the
// address is unusable (not merely not ready).
func missingPort(svc *ServiceInfo, host string, port int) (warning string, bad bool) {
	empty := true
	hints := stringSet{}
	for servicePort, eps := range svc.EndpointPorts {
		for _, ep := range eps {
			empty = false
			if ep == uint32(port) {
				hints.add(strconv.Itoa(servicePort))
			}
		}
	}
	if empty {
		return fmt.Sprintf("no instances found for hostname %q", host), false
	}
	if len(hints) > 0 {
		return fmt.Sprintf("port %d not found for hostname %q (hint: the service port should be specified, not the workload port. "+
			"Did you mean one of these ports: %v?)", port, host, hints.sorted()), true
	}
	_, managed := svc.Labels[labelGatewayManaged]
	onService := slices.ContainsFunc(svc.Ports, func(p ServicePort) bool { return p.Port == port })
	if !managed || !onService {
		// a managed Gateway's Service with the port only waits for endpoints
		return fmt.Sprintf("port %d not found for hostname %q", port, host), true
	}
	return "", false
}

// report sets the Gateway's conditions, addresses and listener list.
func (g *gatewayState) report(services []string, servers []*istio.Server, gwErr, backendTLSErr *ConfigError, valid int) {
	inst := resolveInstances(g.ctx, g.cfg.Namespace, services, servers)
	conds := map[string]*condition{
		string(gatewayv1.GatewayConditionAccepted):     {reason: string(gatewayv1.GatewayReasonAccepted), message: "Resource accepted"},
		string(gatewayv1.GatewayConditionProgrammed):   {reason: string(gatewayv1.GatewayReasonProgrammed), message: "Resource programmed"},
		string(gatewayv1.GatewayConditionResolvedRefs): {reason: string(gatewayv1.GatewayReasonResolvedRefs), message: "All references resolved"},
	}
	accepted := conds[string(gatewayv1.GatewayConditionAccepted)]
	switch total := len(g.spec.Listeners); {
	case gwErr != nil:
		accepted.err = gwErr
	case total > 0 && valid == 0:
		accepted.err = &ConfigError{Reason: string(gatewayv1.GatewayReasonListenersNotValid), Message: "None of the Gateway's listeners are valid"}
	case total > 0 && valid < total:
		accepted.reason, accepted.message = string(gatewayv1.GatewayReasonListenersNotValid), "One or more of the Gateway's listeners are invalid"
	}
	if backendTLSErr != nil {
		conds[string(gatewayv1.GatewayConditionResolvedRefs)].err = backendTLSErr
	}
	g.frontendValidationCondition(conds)
	setProgrammed(conds[string(gatewayv1.GatewayConditionProgrammed)], inst, services)
	g.setAddresses(inst)
	// drop the status of listeners that were removed
	have := map[gatewayv1.SectionName]bool{}
	for _, l := range g.spec.Listeners {
		have[l.Name] = true
	}
	kept := make([]gatewayv1.ListenerStatus, 0, len(g.status.Listeners))
	for _, l := range g.status.Listeners {
		if have[l.Name] {
			delete(have, l.Name)
			kept = append(kept, l)
		}
	}
	g.status.Listeners = kept
	g.status.Conditions = setConditions(g.cfg.Generation, g.status.Conditions, conds)
}

// frontendValidationCondition reports AllowInsecureFallback client
// certificate validation, and removes the condition otherwise.
func (g *gatewayState) frontendValidationCondition(conds map[string]*condition) {
	if g.spec.TLS == nil || g.spec.TLS.Frontend == nil {
		return
	}
	f := g.spec.TLS.Frontend
	insecure := f.Default.Validation != nil && f.Default.Validation.Mode == gatewayv1.AllowInsecureFallback
	for _, pp := range f.PerPort {
		insecure = insecure || (pp.TLS.Validation != nil && pp.TLS.Validation.Mode == gatewayv1.AllowInsecureFallback)
	}
	t := string(gatewayv1.GatewayConditionInsecureFrontendValidationMode)
	if insecure {
		conds[t] = &condition{status: "True", reason: string(gatewayv1.GatewayReasonConfigurationChanged),
			message: "Gateway is operating in AllowInsecureFallback mode for frontend validation"}
		return
	}
	meta.RemoveStatusCondition(&g.status.Conditions, t)
}

func setProgrammed(c *condition, inst instances, services []string) {
	if len(inst.internal) > 0 {
		c.message = "Resource programmed, assigned to service(s) " + humanJoin(inst.internal)
	}
	switch {
	case len(services) == 0:
		c.err = &ConfigError{Reason: string(gatewayv1.GatewayReasonUnsupportedAddress), Message: "Failed to assign to any requested addresses"}
	case len(inst.warnings) > 0:
		msg := "Failed to assign to any requested addresses: " + strings.Join(inst.warnings, "; ")
		if len(inst.internal) > 0 {
			msg = fmt.Sprintf("Assigned to service(s) %s, but failed to assign to all requested addresses: %s",
				humanJoin(inst.internal), strings.Join(inst.warnings, "; "))
		}
		reason := gatewayv1.GatewayReasonAddressNotUsable
		if inst.allUsable {
			reason = gatewayv1.GatewayReasonAddressNotAssigned
		}
		c.err = &ConfigError{Reason: string(reason), Message: msg}
	}
}

// setAddresses reports the external addresses, else the internal ones of
// the class's address type. Once reported, addresses are never removed
// for want of new ones.
func (g *gatewayState) setAddresses(inst instances) {
	addrs := inst.external
	if len(addrs) == 0 {
		want := g.info.addressType
		if o, ok := g.cfg.Annotations[annotationAddressType]; ok {
			want = gatewayv1.AddressType(o)
		}
		if want != gatewayv1.HostnameAddressType {
			addrs = slices.Clone(inst.internalIP)
		}
		if want != gatewayv1.IPAddressType {
			for _, hp := range inst.internal {
				h, _, _ := net.SplitHostPort(hp)
				if !slices.Contains(inst.pending, h) && !slices.Contains(addrs, h) {
					addrs = append(addrs, h)
				}
			}
		}
	}
	if len(addrs) == 0 {
		return
	}
	g.status.Addresses = make([]gatewayv1.GatewayStatusAddress, 0, len(addrs))
	for _, a := range addrs {
		t := gatewayv1.HostnameAddressType
		if _, err := netip.ParseAddr(a); err == nil {
			t = gatewayv1.IPAddressType
		}
		g.status.Addresses = append(g.status.Addresses, gatewayv1.GatewayStatusAddress{Value: a, Type: &t})
	}
}
