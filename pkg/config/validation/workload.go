package validation

import (
	"strings"

	networking "istio.io/api/networking/v1alpha3"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/meshplane/istiod/pkg/config"
)

// ValidateWorkloadEntry checks a WorkloadEntry.
func ValidateWorkloadEntry(cfg config.Config) (Warning, error) {
	we, ok := cfg.Spec.(*networking.WorkloadEntry)
	if !ok {
		return nil, netCannotCast("WorkloadEntry", cfg.Spec)
	}
	if we == nil {
		we = &networking.WorkloadEntry{}
	}
	r := &Report{}
	// a standalone WorkloadEntry does not know its service ports, and may be
	// addressed by DNS name
	netCheckWorkloadEntry(r, "spec", we, nil, true)
	return r.Result()
}

// netCheckWorkloadEntry validates a workload entry (a WorkloadEntry spec or
// a ServiceEntry endpoint). servicePorts, when not nil, are the port names
// the endpoint ports must refer to; allowFQDN admits DNS names as address.
func netCheckWorkloadEntry(r *Report, p Path, we *networking.WorkloadEntry, servicePorts map[string]bool, allowFQDN bool) {
	addr := we.GetAddress()
	ap := p.Field("address")
	switch {
	case addr == "" && we.GetNetwork() == "":
		r.Errorf(ap, "address is required")
	case addr == "":
		r.Warnf(ap, "address is unset with network %q", we.GetNetwork())
	case strings.HasPrefix(addr, netUnixPrefix):
		r.Add(ap, netCheckUnixAddress(strings.TrimPrefix(addr, netUnixPrefix)))
		if len(we.GetPorts()) != 0 {
			r.Errorf(p.Field("ports"), "unix endpoint %s must not include ports", addr)
		}
		if servicePorts != nil && len(servicePorts) != 1 {
			r.Errorf(ap, "exactly 1 service port required for unix endpoints")
		}
	case netIsIP(addr):
	case !allowFQDN:
		r.Errorf(ap, "endpoint address %q is not a valid IP address", addr)
	default:
		if err := netCheckFQDN(addr); err != nil {
			r.Errorf(ap, "endpoint address %q is not a valid FQDN or an IP address", addr)
		}
	}
	netCheckWorkloadPorts(r, p.Field("ports"), we.GetPorts(), servicePorts)
	r.Add(p.Field("labels"), CheckLabels(we.GetLabels()))
	netCheckServiceAccount(r, p.Field("serviceAccount"), we.GetServiceAccount())
}

func netCheckWorkloadPorts(r *Report, p Path, ports map[string]uint32, servicePorts map[string]bool) {
	for _, name := range netSortedKeys(ports) {
		pp := p.Key(name)
		if servicePorts != nil && !servicePorts[name] {
			r.Errorf(pp, "endpoint port %v is not defined by the service entry (no service port is named %q)", ports[name], name)
		}
		r.Add(pp, netCheckPortName(name))
		r.Add(pp, CheckPort(ports[name]))
	}
}

// netCheckServiceAccount requires a Kubernetes service account name.
func netCheckServiceAccount(r *Report, p Path, sa string) {
	if sa == "" {
		return
	}
	if errs := validation.IsDNS1123Subdomain(sa); len(errs) > 0 {
		r.Errorf(p, "invalid service account name %q: %s", sa, strings.Join(errs, "; "))
	}
}

// ValidateWorkloadGroup checks a WorkloadGroup. The template is a
// WorkloadEntry whose address and labels are filled in on registration.
func ValidateWorkloadGroup(cfg config.Config) (Warning, error) {
	wg, ok := cfg.Spec.(*networking.WorkloadGroup)
	if !ok {
		return nil, netCannotCast("WorkloadGroup", cfg.Spec)
	}
	if wg == nil {
		wg = &networking.WorkloadGroup{}
	}
	r := &Report{}
	spec := Path("spec")
	if md := wg.GetMetadata(); md != nil {
		if err := CheckLabels(md.GetLabels()); err != nil {
			r.Errorf(spec.Field("metadata").Field("labels"), "invalid labels: %v", err)
		}
		if errs := apivalidation.ValidateAnnotations(md.GetAnnotations(), field.NewPath("annotations")); len(errs) > 0 {
			r.Errorf(spec.Field("metadata").Field("annotations"), "%s", errs.ToAggregate().Error())
		}
	}
	tp := spec.Field("template")
	if t := wg.GetTemplate(); t == nil {
		r.Errorf(tp, "template is required")
	} else {
		if t.GetAddress() != "" {
			r.Warnf(tp.Field("address"), "address should not be set in a template; it is filled in when a workload registers")
		}
		if len(t.GetLabels()) > 0 {
			r.Warnf(tp.Field("labels"), "labels should not be set in a template; use metadata.labels")
		}
		r.Add(tp.Field("labels"), CheckLabels(t.GetLabels()))
		netCheckWorkloadPorts(r, tp.Field("ports"), t.GetPorts(), nil)
		netCheckServiceAccount(r, tp.Field("serviceAccount"), t.GetServiceAccount())
	}
	wgCheckProbe(r, spec.Field("probe"), wg.GetProbe())
	return r.Result()
}

// wgCheckProbe validates a readiness probe: non-negative timings and
// exactly one health check method.
func wgCheckProbe(r *Report, p Path, pr *networking.ReadinessProbe) {
	if pr == nil {
		return
	}
	for _, f := range []struct {
		name string
		v    int32
	}{
		{"initialDelaySeconds", pr.GetInitialDelaySeconds()}, {"timeoutSeconds", pr.GetTimeoutSeconds()},
		{"periodSeconds", pr.GetPeriodSeconds()}, {"successThreshold", pr.GetSuccessThreshold()},
		{"failureThreshold", pr.GetFailureThreshold()},
	} {
		if f.v < 0 {
			r.Errorf(p.Field(f.name), "%s must be non-negative", f.name)
		}
	}
	switch m := pr.GetHealthCheckMethod().(type) {
	case *networking.ReadinessProbe_HttpGet:
		hp := p.Field("httpGet")
		if m.HttpGet == nil {
			r.Errorf(hp, "httpGet may not be nil")
			return
		}
		r.Add(hp.Field("port"), CheckPort(m.HttpGet.GetPort()))
		if s := m.HttpGet.GetScheme(); s != "" && s != "HTTP" && s != "HTTPS" {
			r.Errorf(hp.Field("scheme"), `httpGet.scheme must be one of "HTTPS", "HTTP" (got %q)`, s)
		}
		for i, h := range m.HttpGet.GetHttpHeaders() {
			if h == nil {
				r.Errorf(hp.Field("httpHeaders").Index(i), "invalid nil header")
				continue
			}
			r.Add(hp.Field("httpHeaders").Index(i).Field("name"), netCheckHeaderNameRe(h.GetName(), netProbeHeaderRe))
		}
	case *networking.ReadinessProbe_TcpSocket:
		if m.TcpSocket == nil {
			r.Errorf(p.Field("tcpSocket"), "tcpSocket may not be nil")
			return
		}
		r.Add(p.Field("tcpSocket").Field("port"), CheckPort(m.TcpSocket.GetPort()))
	case *networking.ReadinessProbe_Exec:
		if m.Exec == nil {
			r.Errorf(p.Field("exec"), "exec may not be nil")
			return
		}
		if len(m.Exec.GetCommand()) == 0 {
			r.Errorf(p.Field("exec").Field("command"), "exec.command is required")
		}
	case *networking.ReadinessProbe_Grpc:
		if m.Grpc == nil {
			r.Errorf(p.Field("grpc"), "grpc may not be null")
			return
		}
		r.Add(p.Field("grpc").Field("port"), CheckPort(m.Grpc.GetPort()))
	default:
		r.Errorf(p, "unknown health check method %T (set one of httpGet, tcpSocket, exec or grpc)", m)
	}
}
