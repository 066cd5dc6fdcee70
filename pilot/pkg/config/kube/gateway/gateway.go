package gateway

import (
	"fmt"
	"strings"

	istio "istio.io/api/networking/v1alpha3"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/config/schema/gvk"
)

// ConvertGateway translates one Gateway: one synthetic Istio Gateway per
// listener that yields a server, and the Gateway's status before routes are
// counted. A Gateway of a class that is not ours yields nothing.
func ConvertGateway(ctx Context, opts Options, cfg config.Config) GatewayResult {
	spec, ok := cfg.Spec.(*gatewayv1.GatewaySpec)
	if !ok || spec == nil {
		return GatewayResult{}
	}
	class := ctx.Class(string(spec.GatewayClassName))
	if class == nil {
		return GatewayResult{}
	}
	info, known := opts.classInfoOf(class.Controller)
	if !known {
		return GatewayResult{}
	}
	status := &gatewayv1.GatewayStatus{}
	if cur, ok := cfg.Status.(*gatewayv1.GatewayStatus); ok && cur != nil {
		status = cur.DeepCopy()
	}
	if info.disableRouteGeneration {
		reportUnmanagedGateway(status, cfg, spec)
		return GatewayResult{Status: status}
	}
	gw := gatewayState{ctx: ctx, opts: opts, cfg: cfg, spec: spec, status: status, info: info}
	services, err := gatewayServices(opts, info, cfg, spec)
	if len(services) == 0 && err != nil {
		gw.report(services, nil, err, gw.clientCertificateError(), 0)
		return GatewayResult{Status: status}
	}
	if err == nil {
		err = gw.parametersRefError()
	}
	serviceAccount := ""
	if isManaged(spec) {
		serviceAccount = cfg.Annotations[annotationSAOverride]
		if serviceAccount == "" {
			serviceAccount = defaultName(cfg.Name, string(spec.GatewayClassName), info)
		}
	}
	conflicts := listenerConflicts(spec.Listeners)
	var servers []*istio.Server
	var listeners []Listener
	valid := 0
	for i, l := range spec.Listeners {
		if reason, ok := conflicts[string(l.Name)]; ok {
			status.Listeners = reportListenerConflict(i, l, cfg.Generation, status.Listeners, reason)
			continue
		}
		server, programmed := gw.buildListener(i, l)
		if programmed {
			valid++
		}
		if server == nil {
			continue
		}
		servers = append(servers, server)
		if info.waypoint {
			// a waypoint's listeners yield no synthetic Gateway
			continue
		}
		listeners = append(listeners, gw.listener(l, server, programmed, services, serviceAccount))
	}
	gw.report(services, servers, err, gw.clientCertificateError(), valid)
	return GatewayResult{Status: status, Listeners: listeners}
}

// gatewayState is one Gateway being translated.
type gatewayState struct {
	ctx    Context
	opts   Options
	cfg    config.Config
	spec   *gatewayv1.GatewaySpec
	status *gatewayv1.GatewayStatus
	info   classInfo
}

// listener is the synthetic Gateway of one listener and what routes need
// to attach to it.
func (g *gatewayState) listener(l gatewayv1.Listener, server *istio.Server, programmed bool, services []string,
	serviceAccount string,
) Listener {
	name := syntheticGatewayName(g.cfg.Name, string(l.Name))
	annotations := map[string]string{
		annotationParents:        parentsAnnotation("Gateway", g.cfg.Name, g.cfg.Namespace, string(l.Name)),
		annotationGwSemantics:    semanticsGateway,
		annotationGatewayService: strings.Join(services, ","),
		annotationServiceAccount: serviceAccount,
	}
	allowed, _ := supportedKinds(l)
	return Listener{
		Config: config.Config{
			Meta: config.Meta{
				GroupVersionKind:  gvk.Gateway,
				Name:              name,
				Namespace:         g.cfg.Namespace,
				Domain:            g.opts.DomainSuffix,
				Annotations:       annotations,
				CreationTimestamp: g.cfg.CreationTimestamp,
			},
			Spec: &istio.Gateway{Servers: []*istio.Server{server}},
		},
		Valid: programmed,
		Parent: ParentInfo{
			InternalName:     g.cfg.Namespace + "/" + name,
			AllowedKinds:     allowed,
			Hostnames:        server.Hosts,
			OriginalHostname: string(orDefault(l.Hostname, "")),
			SectionName:      string(l.Name),
			Port:             int(l.Port),
			Protocol:         string(l.Protocol),
		},
	}
}

// isManaged reports whether Istio deploys the Gateway itself: no address,
// or a single IP address.
func isManaged(spec *gatewayv1.GatewaySpec) bool {
	switch len(spec.Addresses) {
	case 0:
		return true
	case 1:
		t := spec.Addresses[0].Type
		return t == nil || *t == gatewayv1.IPAddressType
	}
	return false
}

// gatewayServices are the hostnames of the Services the Gateway's proxies
// sit behind: the generated <gateway>-<class> Service (<gateway> for a
// waypoint) when Istio deploys it, else the Hostname addresses (short names expanded). Other address
// types are reported as a soft error.
func gatewayServices(opts Options, info classInfo, cfg config.Config, spec *gatewayv1.GatewaySpec) ([]string, *ConfigError) {
	if isManaged(spec) {
		name := cfg.Annotations[annotationNameOverride]
		if name == "" {
			name = defaultName(cfg.Name, string(spec.GatewayClassName), info)
		}
		return []string{serviceHostname(name, cfg.Namespace, opts.DomainSuffix)}, nil
	}
	services := []string{}
	var skipped []string
	for _, a := range spec.Addresses {
		if a.Type != nil && *a.Type != gatewayv1.HostnameAddressType {
			skipped = append(skipped, a.Value)
			continue
		}
		fqdn := a.Value
		if !strings.Contains(fqdn, ".") {
			fqdn = serviceHostname(fqdn, cfg.Namespace, opts.DomainSuffix)
		}
		services = append(services, fqdn)
	}
	if len(skipped) > 0 {
		return services, &ConfigError{Reason: string(gatewayv1.GatewayReasonUnsupportedAddress),
			Message: fmt.Sprintf("only Hostname is supported, ignoring %v", skipped)}
	}
	if _, ok := cfg.Annotations[annotationServiceType]; ok {
		return services, &ConfigError{Reason: "DeprecatedField",
			Message: fmt.Sprintf("annotation %v is deprecated, use Spec.Infrastructure.Routeability", annotationServiceType)}
	}
	return services, nil
}

// parametersRefError checks spec.infrastructure.parametersRef: a
// ConfigMap of the Gateway's namespace that exists.
func (g *gatewayState) parametersRefError() *ConfigError {
	if g.spec.Infrastructure == nil || g.spec.Infrastructure.ParametersRef == nil {
		return nil
	}
	p := g.spec.Infrastructure.ParametersRef
	if string(p.Kind) != "ConfigMap" || string(p.Group) != "" {
		return &ConfigError{Reason: string(gatewayv1.GatewayReasonInvalidParameters),
			Message: fmt.Sprintf("Unsupported parametersRef group/kind %s/%s, only ConfigMap is supported", p.Group, p.Kind)}
	}
	if _, ok := g.ctx.ConfigMap(g.cfg.Namespace, p.Name); !ok {
		return &ConfigError{Reason: string(gatewayv1.GatewayReasonInvalidParameters),
			Message: fmt.Sprintf("parametersRef ConfigMap %s/%s does not exist", g.cfg.Namespace, p.Name)}
	}
	return nil
}

// reportUnmanagedGateway is the status of a remote Gateway: accepted, not
// programmed by Istio, its addresses echoed.
func reportUnmanagedGateway(status *gatewayv1.GatewayStatus, cfg config.Config, spec *gatewayv1.GatewaySpec) {
	conds := map[string]*condition{
		string(gatewayv1.GatewayConditionAccepted): {reason: string(gatewayv1.GatewayReasonAccepted), message: "Resource accepted"},
		string(gatewayv1.GatewayConditionProgrammed): {reason: string(gatewayv1.GatewayReasonProgrammed),
			message: "This Gateway is remote; Istio will not program it"},
	}
	status.Addresses = nil
	for _, a := range spec.Addresses {
		status.Addresses = append(status.Addresses, gatewayv1.GatewayStatusAddress(a))
	}
	status.Listeners = nil
	status.Conditions = setConditions(cfg.Generation, status.Conditions, conds)
}

// FinalizeGatewayStatus sets each listener's attachedRoutes from the routes
// attached to the Gateway. status is not modified.
func FinalizeGatewayStatus(status *gatewayv1.GatewayStatus, attachments []Attachment) *gatewayv1.GatewayStatus {
	if status == nil {
		return nil
	}
	counts := map[string]int32{}
	for _, a := range attachments {
		counts[a.Listener]++
	}
	out := status.DeepCopy()
	for i := range out.Listeners {
		out.Listeners[i].AttachedRoutes = counts[string(out.Listeners[i].Name)]
	}
	return out
}
