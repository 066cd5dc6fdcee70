package serviceentry

import (
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"istio.io/api/annotation"
	metav1alpha1 "istio.io/api/meta/v1alpha1"
	networking "istio.io/api/networking/v1alpha3"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/kube/krt"
)

const (
	unixPrefix = "unix://"
	// workloadNameLabel overrides the workload name of a WorkloadEntry.
	workloadNameLabel = "service.istio.io/workload-name"
)

// weInfo is a converted WorkloadEntry: the workload instance (its Labels are
// the merged labels selectors match) and what was wrong with it.
type weInfo struct {
	wi       model.WorkloadInstance
	valid    bool
	problems []string
}

func (w weInfo) ResourceName() string         { return w.wi.ResourceName() }
func (w weInfo) GetLabels() map[string]string { return w.wi.Labels }
func (w weInfo) GetNamespace() string         { return w.wi.Namespace }
func (w weInfo) Equals(o weInfo) bool {
	return w.valid == o.valid && w.wi.Equals(o.wi) && slices.Equal(w.problems, o.problems)
}

// workloadContext is what converting a workload needs besides the object.
type workloadContext struct {
	clusterID      string
	trustDomain    string
	defaultNetwork string
	networkFor     func(ip string, labels map[string]string) string
}

// workloadNetwork is the network of a workload entry's endpoint and the
// one its topology.istio.io/network label gets when it has none, as
// Istio's ServiceEntry registry decides them: the endpoint's network is
// the entry's network field (its WorkloadGroup template's for an entry
// created from a group), whatever its labels say; the label, when the
// entry has none, is that field, else what the NetworkFor callback says
// of the address and labels (Istio's WithNetworkIDCb), else nothing.
// DefaultNetwork, when set, stands in for an empty field in both.
func workloadNetwork(we *networking.WorkloadEntry, labels map[string]string, wc workloadContext) (endpoint, label string) {
	endpoint = we.GetNetwork()
	label = endpoint
	if label == "" && wc.networkFor != nil {
		label = wc.networkFor(we.GetAddress(), labels)
	}
	return firstNonEmpty(endpoint, wc.defaultNetwork), firstNonEmpty(label, wc.defaultNetwork)
}

// buildWorkloadEntry is the transform WorkloadEntry → weInfo.
func (c *Controller) buildWorkloadEntry(ctx krt.HandlerContext, cfg config.Config) *weInfo {
	st := krt.FetchOne(ctx, c.settings.AsCollection())
	we, ok := cfg.Spec.(*networking.WorkloadEntry)
	if st == nil || !ok || we == nil {
		return nil
	}
	info := &weInfo{}
	labels := mergeLabels(we.GetLabels(), cfg.Labels)
	if group := groupOf(cfg); group != "" {
		if g := krt.FetchOne(ctx, c.groups, krt.FilterKey(cfg.Namespace+"/"+group)); g != nil {
			we, labels = applyTemplate(we, labels, *g)
		} else {
			info.problems = append(info.problems, fmt.Sprintf("WorkloadGroup %s/%s not found; its template is not applied", cfg.Namespace, group))
		}
	}
	wc := workloadContext{clusterID: c.opts.ClusterID, trustDomain: st.TrustDomain, defaultNetwork: st.DefaultNetwork,
		networkFor: c.opts.NetworkFor}
	name := workloadName(cfg.Name, cfg.Annotations, cfg.Labels)
	wi, err := convertWorkload(we, labels, cfg.Namespace, cfg.Name, name, wc)
	if err != nil {
		info.problems = append(info.problems, err.Error())
		wi = model.WorkloadInstance{Name: cfg.Name, Namespace: cfg.Namespace, Kind: model.WorkloadEntryKind, Labels: labels}
	} else {
		info.valid = true
	}
	if unhealthy(cfg.Annotations, cfg.Status) {
		wi.Endpoint.HealthStatus = model.UnHealthy
	}
	info.wi = wi
	return info
}

// mergeLabels overlays the metadata labels on the spec labels.
func mergeLabels(spec, meta map[string]string) map[string]string {
	if len(meta) == 0 {
		return spec
	}
	out := maps.Clone(spec)
	if out == nil {
		out = map[string]string{}
	}
	maps.Copy(out, meta)
	return out
}

// groupOf names the WorkloadGroup a WorkloadEntry was created from.
func groupOf(cfg config.Config) string {
	if g := cfg.Annotations[annotation.IoIstioAutoRegistrationGroup.Name]; g != "" {
		return g
	}
	for _, r := range cfg.OwnerReferences {
		if r.Kind == "WorkloadGroup" && r.Controller != nil && *r.Controller {
			return r.Name
		}
	}
	return ""
}

// applyTemplate fills what the entry leaves unset from the group's template;
// labels are the group's metadata labels, then the template's, then the
// entry's.
func applyTemplate(we *networking.WorkloadEntry, labels map[string]string, group config.Config) (*networking.WorkloadEntry, map[string]string) {
	wg, ok := group.Spec.(*networking.WorkloadGroup)
	if !ok || wg == nil {
		return we, labels
	}
	t := wg.GetTemplate()
	out := &networking.WorkloadEntry{
		Address:        we.GetAddress(),
		Ports:          we.GetPorts(),
		Network:        firstNonEmpty(we.GetNetwork(), t.GetNetwork()),
		Locality:       firstNonEmpty(we.GetLocality(), t.GetLocality()),
		Weight:         we.GetWeight(),
		ServiceAccount: firstNonEmpty(we.GetServiceAccount(), t.GetServiceAccount()),
	}
	if len(out.Ports) == 0 {
		out.Ports = t.GetPorts()
	}
	if out.Weight == 0 {
		out.Weight = t.GetWeight()
	}
	merged := maps.Clone(wg.GetMetadata().GetLabels())
	if merged == nil {
		merged = map[string]string{}
	}
	maps.Copy(merged, t.GetLabels())
	maps.Copy(merged, labels)
	return out, merged
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// healthCheckAnnotation marks a WorkloadEntry whose Healthy condition
// decides its endpoint's health (set by auto-registration when the agent
// probes readiness).
const healthCheckAnnotation = "proxy.istio.io/health-checks-enabled"

// unhealthy reports whether a WorkloadEntry's endpoint is unhealthy, as
// Istio decides it: only an entry whose health-check annotation parses as
// true is health-checked, and it is healthy only once its Healthy
// condition is True (a new entry is unhealthy until its first probe
// passes); every other entry is healthy, whatever its status says.
func unhealthy(annotations map[string]string, status any) bool {
	if on, err := strconv.ParseBool(annotations[healthCheckAnnotation]); err != nil || !on {
		return false
	}
	st, ok := status.(*metav1alpha1.IstioStatus)
	if !ok || st == nil {
		return true
	}
	for _, c := range st.GetConditions() {
		if c.GetType() == "Healthy" {
			return c.GetStatus() != "True"
		}
	}
	return true
}

// workloadName is the name a WorkloadEntry reports for telemetry: its
// group, a service.istio.io/workload-name label, else its own name.
func workloadName(name string, ann, labels map[string]string) string {
	if g := ann[annotation.IoIstioAutoRegistrationGroup.Name]; g != "" {
		return g
	}
	if n := labels[workloadNameLabel]; n != "" {
		return n
	}
	return name
}

// convertWorkload turns a workload entry (a WorkloadEntry spec or an
// inline ServiceEntry endpoint) into a workload instance. It fails on an
// address that is neither an IP, a DNS name nor a unix socket path.
func convertWorkload(we *networking.WorkloadEntry, labels map[string]string, ns, objName, workload string,
	wc workloadContext,
) (model.WorkloadInstance, error) {
	addr := we.GetAddress()
	dnsOnly, err := classifyAddress(addr)
	if err != nil {
		return model.WorkloadInstance{}, err
	}
	locality := we.GetLocality()
	if locality == "" {
		locality = model.LocalityFromLabels(labels)
	}
	network, labelNetwork := workloadNetwork(we, labels, wc)
	sa := ""
	if we.GetServiceAccount() != "" {
		sa = model.SpiffeIdentity(wc.trustDomain, ns, we.GetServiceAccount())
	}
	return model.WorkloadInstance{
		Name:      objName,
		Namespace: ns,
		Kind:      model.WorkloadEntryKind,
		Labels:    labels,
		Endpoint: &model.IstioEndpoint{
			Addresses:      []string{addr},
			Labels:         model.AugmentLabels(labels, wc.clusterID, locality, "", labelNetwork),
			Network:        network,
			Locality:       model.Locality{Label: locality, ClusterID: wc.clusterID},
			LbWeight:       we.GetWeight(),
			Namespace:      ns,
			WorkloadName:   workload,
			TLSMode:        entryTLSMode(labels, we.GetServiceAccount()),
			ServiceAccount: sa,
		},
		PortMap:             we.GetPorts(),
		DNSServiceEntryOnly: dnsOnly,
	}, nil
}

// classifyAddress accepts IPs, unix socket paths and DNS names (which only
// DNS ServiceEntries may use).
func classifyAddress(addr string) (dnsOnly bool, err error) {
	switch {
	case addr == "":
		return false, fmt.Errorf("address is empty")
	case strings.HasPrefix(addr, unixPrefix):
		if !strings.HasPrefix(strings.TrimPrefix(addr, unixPrefix), "/") {
			return false, fmt.Errorf("address %q: a unix socket path must be absolute", addr)
		}
		return true, nil
	}
	if _, err := netip.ParseAddr(addr); err == nil {
		return false, nil
	}
	if errs := validation.IsDNS1123Subdomain(strings.TrimSuffix(addr, ".")); len(errs) > 0 {
		return false, fmt.Errorf("address %q is neither an IP, a DNS name nor a unix socket", addr)
	}
	return true, nil
}

// entryTLSMode is the security.istio.io/tlsMode label, else "istio" when the
// entry has a service account, else "disabled".
func entryTLSMode(labels map[string]string, sa string) string {
	if v, ok := labels[model.TLSModeLabel]; ok {
		return v
	}
	if sa != "" {
		return model.IstioMutualTLSModeLabel
	}
	return model.DisabledTLSModeLabel
}

// endpointFor binds a workload to one service port: the workload's port of
// that name, else the targetPort, else the port number (0 for unix sockets).
func endpointFor(w model.WorkloadInstance, p *networking.ServicePort) *model.IstioEndpoint {
	ep := w.Endpoint.ShallowCopy()
	ep.ServicePortName = p.GetName()
	ep.LegacyClusterPortKey = int(p.GetNumber())
	switch a := ep.FirstAddress(); {
	case strings.HasPrefix(a, unixPrefix):
		ep.Addresses = []string{strings.TrimPrefix(a, unixPrefix)}
		ep.EndpointPort = 0
	case w.PortMap[p.GetName()] > 0:
		ep.EndpointPort = w.PortMap[p.GetName()]
	case p.GetTargetPort() > 0:
		ep.EndpointPort = p.GetTargetPort()
	default:
		ep.EndpointPort = p.GetNumber()
	}
	if ep.Namespace == "" {
		ep.Namespace = w.Namespace
	}
	if ep.WorkloadName == "" {
		ep.WorkloadName = w.Name
	}
	return ep
}

// inlineWorkload converts the i-th inline endpoint of a ServiceEntry.
func inlineWorkload(cfg config.Config, i int, we *networking.WorkloadEntry, wc workloadContext) (model.WorkloadInstance, error) {
	name := cfg.Name + "-" + strconv.Itoa(i)
	wi, err := convertWorkload(we, we.GetLabels(), cfg.Namespace, name, name, wc)
	if err != nil {
		return wi, fmt.Errorf("spec.endpoints[%d]: %v", i, err)
	}
	return wi, nil
}
