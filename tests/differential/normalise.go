package differential

import (
	"context"
	"fmt"
	"net"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/meshplane/istiod/tests/kube"
)

// normalise makes what must differ between the two worlds equal. Two
// rules:
//   - cluster IPs, which each API server allocates itself, are replaced by
//     "<clusterIP namespace/name>" of their Service wherever they appear
//     (domains, listener names and addresses, endpoints);
//   - the API server's own address, the endpoint of Service
//     default/kubernetes (each server listens on a port of its own), has
//     its port replaced by "<API server port>".
//
// Nothing else is normalised: neither control plane's identifier,
// versions, nonces nor certificates are part of the resources compared
// (SDS is not fetched; certificates travel there).
func normalise(v any, ips map[string]string, api map[string]bool) any {
	v = replaceIPs(v, ips)
	walkObjects(v, func(m map[string]any) {
		if addr, ok := m["address"].(string); ok && api[net.JoinHostPort(addr, fmt.Sprint(m["portValue"]))] {
			m["portValue"] = "<API server port>"
		}
	})
	return v
}

// apiServerEndpoints are the addresses ("ip:port") of the EndpointSlices
// of Service default/kubernetes: the API server's own, which it writes
// (and, once a multicluster case started the remote, the remote's).
func (p *plane) apiServerEndpoints(ctx context.Context) (map[string]bool, error) {
	out := map[string]bool{}
	for _, env := range []*kube.Env{p.kube, p.remote} {
		if env == nil {
			continue
		}
		if err := addAPIServerEndpoints(ctx, env, out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func addAPIServerEndpoints(ctx context.Context, env *kube.Env, out map[string]bool) error {
	list, err := env.Kube.DiscoveryV1().EndpointSlices("default").List(ctx,
		metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=kubernetes"})
	if err != nil {
		return err
	}
	for _, es := range list.Items {
		for _, ep := range es.Endpoints {
			for _, a := range ep.Addresses {
				for _, port := range es.Ports {
					if port.Port != nil {
						out[net.JoinHostPort(a, strconv.Itoa(int(*port.Port)))] = true
					}
				}
			}
		}
	}
	return nil
}

// walkObjects calls fn on every JSON object of v.
func walkObjects(v any, fn func(map[string]any)) {
	switch x := v.(type) {
	case map[string]any:
		fn(x)
		for _, e := range x {
			walkObjects(e, fn)
		}
	case []any:
		for _, e := range x {
			walkObjects(e, fn)
		}
	}
}

// clusterIPNames maps each Service's cluster IPs in the plane's API
// server to "<clusterIP namespace/name>".
func (p *plane) clusterIPNames(ctx context.Context) (map[string]string, error) {
	list, err := p.kube.Kube.CoreV1().Services("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, s := range list.Items {
		for _, ip := range append([]string{s.Spec.ClusterIP}, s.Spec.ClusterIPs...) {
			if ip != "" && ip != corev1.ClusterIPNone {
				out[ip] = "<clusterIP " + s.Namespace + "/" + s.Name + ">"
			}
		}
	}
	return out, nil
}
