package serviceentry

import (
	"maps"
	"slices"
	"time"

	networking "istio.io/api/networking/v1alpha3"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/kube/krt"
)

// seInfo is a converted ServiceEntry: one service per host and the
// endpoints of each host.
type seInfo struct {
	key       string // namespace/name
	namespace string
	created   time.Time
	services  []*model.Service
	endpoints map[string][]*model.IstioEndpoint // hostname → endpoints
	problems  []string
}

func (s seInfo) ResourceName() string { return s.key }

func (s seInfo) Equals(o seInfo) bool {
	return s.key == o.key && s.created.Equal(o.created) &&
		slices.EqualFunc(s.services, o.services, func(a, b *model.Service) bool {
			return a.Equals(b) && a.ResourceVersion == b.ResourceVersion
		}) &&
		maps.EqualFunc(s.endpoints, o.endpoints, model.EndpointsEqual) && slices.Equal(s.problems, o.problems)
}

// service returns the service of a host.
func (s seInfo) service(host string) *model.Service {
	for _, svc := range s.services {
		if svc.Hostname == host {
			return svc
		}
	}
	return nil
}

// buildServiceEntry is the transform ServiceEntry → seInfo.
func (c *Controller) buildServiceEntry(ctx krt.HandlerContext, cfg config.Config) *seInfo {
	st := krt.FetchOne(ctx, c.settings.AsCollection())
	se, ok := cfg.Spec.(*networking.ServiceEntry)
	if st == nil || !ok || se == nil {
		return nil
	}
	info := &seInfo{key: cfg.Namespace + "/" + cfg.Name, namespace: cfg.Namespace, created: cfg.CreationTimestamp,
		endpoints: map[string][]*model.IstioEndpoint{}}
	ports, problems := validPorts(se)
	services, more := convertServices(cfg, se, ports, c.opts.ClusterID)
	info.services = services
	info.problems = append(problems, more...)
	wc := workloadContext{clusterID: c.opts.ClusterID, trustDomain: st.TrustDomain, defaultNetwork: st.DefaultNetwork,
		networkFor: c.opts.NetworkFor}
	workloads := c.inlineWorkloads(cfg, se, wc, info)
	for _, w := range c.selectedWorkloads(ctx, cfg, se) {
		// a workload named by DNS (or a socket) serves DNS entries only
		if !w.DNSServiceEntryOnly || isDNS(se.GetResolution()) {
			workloads = append(workloads, w)
		}
	}
	dnsHostEndpoints := len(se.GetEndpoints()) == 0 && se.GetWorkloadSelector() == nil && isDNS(se.GetResolution())
	for _, svc := range services {
		var eps []*model.IstioEndpoint
		for _, p := range ports {
			if dnsHostEndpoints {
				eps = append(eps, hostEndpoint(cfg, svc.Hostname, p, c.opts.ClusterID))
				continue
			}
			for _, w := range workloads {
				eps = append(eps, endpointFor(w, p))
			}
		}
		if len(eps) > 0 {
			info.endpoints[svc.Hostname] = eps
		}
	}
	return info
}

// inlineWorkloads converts the inline endpoints; bad ones are reported.
func (c *Controller) inlineWorkloads(cfg config.Config, se *networking.ServiceEntry, wc workloadContext, info *seInfo) []model.WorkloadInstance {
	var out []model.WorkloadInstance
	for i, we := range se.GetEndpoints() {
		wi, err := inlineWorkload(cfg, i, we, wc)
		if err != nil {
			info.problems = append(info.problems, err.Error())
			continue
		}
		out = append(out, wi)
	}
	return out
}

// selectedWorkloads returns the pods and then the WorkloadEntries of the
// namespace the workloadSelector selects (Istio orders them by kind, pods
// first, then by name), then other clusters' entries.
func (c *Controller) selectedWorkloads(ctx krt.HandlerContext, cfg config.Config, se *networking.ServiceEntry) []model.WorkloadInstance {
	sel := se.GetWorkloadSelector()
	if sel == nil {
		return nil
	}
	var out []model.WorkloadInstance
	if c.opts.Workloads != nil {
		for _, w := range krt.Fetch(ctx, c.opts.Workloads, krt.FilterNamespace(cfg.Namespace), krt.FilterLabel(sel.GetLabels())) {
			if len(w.Addresses()) > 0 { // a pod without an IP yet
				out = append(out, w)
			}
		}
	}
	for _, we := range krt.Fetch(ctx, c.workloadEntries, krt.FilterNamespace(cfg.Namespace), krt.FilterLabel(sel.GetLabels())) {
		if we.valid {
			out = append(out, we.wi)
		}
	}
	return append(out, c.selectedExternal(ctx, cfg.Namespace, sel.GetLabels())...)
}

// hostEndpoint is the endpoint of a DNS ServiceEntry without workloads: the
// host itself, resolved by the proxy.
func hostEndpoint(cfg config.Config, host string, p *networking.ServicePort, clusterID string) *model.IstioEndpoint {
	port := p.GetNumber()
	if p.GetTargetPort() > 0 {
		port = p.GetTargetPort()
	}
	return &model.IstioEndpoint{
		Addresses:            []string{host},
		EndpointPort:         port,
		ServicePortName:      p.GetName(),
		LegacyClusterPortKey: int(p.GetNumber()),
		TLSMode:              model.DisabledTLSModeLabel,
		Locality:             model.Locality{ClusterID: clusterID},
		Namespace:            cfg.Namespace,
		WorkloadName:         cfg.Name,
	}
}

// mergeHostEndpoints is the union over the ServiceEntries of one host
// (sorted by key); an endpoint key seen earlier wins.
func mergeHostEndpoints(infos []seInfo, host string) []*model.IstioEndpoint {
	if len(infos) == 1 {
		return infos[0].endpoints[host]
	}
	var out []*model.IstioEndpoint
	seen := map[string]bool{}
	for _, s := range infos {
		for _, ep := range s.endpoints[host] {
			if k := ep.Key(); !seen[k] {
				seen[k] = true
				out = append(out, ep)
			}
		}
	}
	return out
}
