package differential_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/meshplane/istiod/pilot/pkg/xds/adsc"
	"github.com/meshplane/istiod/tests/differential"

	_ "github.com/meshplane/istiod/pkg/workloadapi" // the workload API's types, to decode what both send
)

const (
	addressType       = "type.googleapis.com/istio.workload.Address"
	authorizationType = "type.googleapis.com/istio.security.Authorization"
)

// What a ztunnel is sent, on a mesh unlike the shared reference's: pods
// istio-cni redirected and one it did not, a pod opted out, Services with
// HTTP and TCP ports, a WorkloadEntry, a ServiceEntry selecting pods, an
// L4 AuthorizationPolicy with principals, namespaces and ports, a DENY
// policy in the root namespace, a STRICT namespace PeerAuthentication and
// a selector one with a port-level mode. Every Address and Authorization
// resource both control planes send over delta ADS is compared.
func TestZtunnelWorkloadAPIMatchesIstio(t *testing.T) {
	const ns = "ztdiff"
	pod := func(name, app, ip, sa string, redirected bool, extra string) string {
		ann := ""
		if redirected {
			ann = `, annotations: {ambient.istio.io/redirection: enabled}`
		}
		return `
---
apiVersion: v1
kind: Pod
metadata: {name: ` + name + `, namespace: ` + ns + `, labels: {app: ` + app + extra + `}` + ann + `}
spec: {serviceAccountName: ` + sa + `, containers: [{name: app, image: app}]}
status: {podIP: ` + ip + `}`
	}
	c := differential.Case{
		Name: "ztunnel workload api",
		Env:  []string{"PILOT_ENABLE_AMBIENT=true"},
		Objects: `
apiVersion: v1
kind: Namespace
metadata: {name: ` + ns + `, labels: {istio.io/dataplane-mode: ambient}}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: api, namespace: ` + ns + `}` +
			pod("api-6b7c8-aaaaa", "api", "10.244.91.1", "api", true, ", version: v1") +
			pod("api-6b7c8-bbbbb", "api", "10.244.91.2", "api", true, ", version: v2") +
			pod("db-7d8e9-ccccc", "db", "10.244.91.3", "default", false, "") +
			pod("tool-1a2b3-ddddd", "tool", "10.244.91.4", "default", true, ", istio.io/dataplane-mode: none") + `
---
apiVersion: v1
kind: Service
metadata: {name: api, namespace: ` + ns + `}
spec: {clusterIP: 10.0.0.241, selector: {app: api}, ports: [{name: http, port: 8080, targetPort: 8080}, {name: grpc, port: 9090, targetPort: 9090, appProtocol: grpc}]}
---
apiVersion: v1
kind: Service
metadata: {name: db, namespace: ` + ns + `}
spec: {clusterIP: 10.0.0.242, selector: {app: db}, ports: [{name: tcp-pg, port: 5432, targetPort: 5432}]}
---
apiVersion: networking.istio.io/v1
kind: WorkloadEntry
metadata: {name: legacy-vm, namespace: ` + ns + `}
spec: {address: 10.91.0.7, labels: {app: legacy}, serviceAccount: legacy, ports: {http: 8081}}
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: legacy, namespace: ` + ns + `}
spec:
  hosts: [legacy.example.internal]
  addresses: [240.240.0.9]
  location: MESH_INTERNAL
  resolution: STATIC
  ports: [{number: 80, name: http, protocol: HTTP, targetPort: 8081}]
  workloadSelector: {labels: {app: legacy}}
---
apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata: {name: api-callers, namespace: ` + ns + `}
spec:
  selector: {matchLabels: {app: api}}
  rules:
  - from: [{source: {principals: [cluster.local/ns/` + ns + `/sa/default]}}, {source: {namespaces: [other]}}]
    to: [{operation: {ports: ["8080", "9090"]}}]
  - from: [{source: {ipBlocks: [10.1.0.0/16]}}]
---
apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata: {name: db-deny, namespace: ` + ns + `}
spec:
  action: DENY
  selector: {matchLabels: {app: db}}
  rules:
  - from: [{source: {notPrincipals: [cluster.local/ns/` + ns + `/sa/api]}}]
---
apiVersion: security.istio.io/v1
kind: PeerAuthentication
metadata: {name: default, namespace: ` + ns + `}
spec: {mtls: {mode: STRICT}}
---
# named to be created after "default" (the harness creates objects of a
# kind by name): Istio derives a converted policy from the namespace's
# PeerAuthentication by an index lookup it does not depend on, so one
# created before its namespace's policy keeps the conversion made without
# it (no merged STRICT rule); ours follows the namespace policy whatever
# the order (docs/differences.md)
apiVersion: security.istio.io/v1
kind: PeerAuthentication
metadata: {name: strict-db, namespace: ` + ns + `}
spec:
  selector: {matchLabels: {app: db}}
  mtls: {mode: STRICT}
  portLevelMtls: {"9102": {mode: PERMISSIVE}}
`,
		Proxy: differential.Proxy{Pod: "client-5d8f7-abcde", Namespace: ns, IP: "10.244.91.9", Labels: map[string]string{"app": "client"}},
	}
	ztunnel := differential.Proxy{Type: "ztunnel", Pod: "ztunnel-x7k2p", Namespace: "istio-system", IP: "10.244.91.100",
		Metadata: map[string]any{"NAME": "ztunnel-x7k2p", "NODE_NAME": "node-0"}}
	differential.Shared(t).With(t, c, func(w *differential.Worlds) {
		want := []string{
			"Kubernetes//Pod/" + ns + "/api-6b7c8-aaaaa", "Kubernetes//Pod/" + ns + "/db-7d8e9-ccccc",
			ns + "/api." + ns + ".svc.cluster.local", ns + "/legacy.example.internal",
			"Kubernetes/networking.istio.io/WorkloadEntry/" + ns + "/legacy-vm",
			"authorization/" + ns + "/api-callers", "authorization/" + ns + "/converted_peer_authentication_strict-db",
		}
		agree(t, w, agreement{
			what: "ztunnel's workload API",
			get: func(ctx context.Context, fl differential.Flavor) (any, error) {
				got, err := workloadAPI(ctx, w.GRPC(fl), ztunnel, ns, fl == differential.Istio)
				if err != nil {
					return nil, err
				}
				// each API server assigns its own cluster IPs: both name them
				svcs, err := w.Kube(fl).Kube.CoreV1().Services(ns).List(ctx, metav1.ListOptions{})
				if err != nil {
					return nil, err
				}
				names := map[string]string{}
				for _, s := range svcs.Items {
					if ip, err := netip.ParseAddr(s.Spec.ClusterIP); err == nil {
						names[base64.StdEncoding.EncodeToString(ip.AsSlice())] = "<clusterIP " + ns + "/" + s.Name + ">"
					}
				}
				return renameValues(got, names), nil
			},
			ready: func(v any) bool {
				m, _ := v.(map[string]any)
				for _, n := range want {
					if _, ok := m[n]; !ok {
						return false
					}
				}
				return true
			},
		})
	})
}

// renameValues replaces, in a JSON value, every string that names maps.
func renameValues(v any, names map[string]string) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = renameValues(e, names)
		}
	case []any:
		for i, e := range x {
			x[i] = renameValues(e, names)
		}
	case string:
		if n, ok := names[x]; ok {
			return n
		}
	}
	return v
}

// workloadAPI fetches, over delta ADS, the Address and Authorization
// resources a ztunnel is sent that concern namespace ns (or Istio's
// static ones), as JSON values keyed by type and name
// ("authorization/<name>" for policies). unversioned: the control plane
// is Istio's, which sends authorizations without a version.
func workloadAPI(ctx context.Context, addr string, p differential.Proxy, ns string, unversioned bool) (map[string]any, error) {
	cfg, err := p.ADSConfig()
	if err != nil {
		return nil, err
	}
	cfg.Delta, cfg.Unversioned = true, unversioned
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	c, err := adsc.Dial(ctx, addr, cfg)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	for _, typ := range []string{addressType, authorizationType} {
		if err := c.Watch(typ); err != nil {
			return nil, err
		}
	}
	seen := map[string]bool{}
	for len(seen) < 2 {
		r, err := c.Next(15 * time.Second)
		if err != nil {
			return nil, fmt.Errorf("waiting for both types: %v", err)
		}
		seen[r.TypeURL] = true
	}
	// later pushes (a control plane still reading) are taken as they come
	for {
		if _, err := c.Next(300 * time.Millisecond); err != nil {
			break
		}
	}
	out := map[string]any{}
	for _, typ := range []string{addressType, authorizationType} {
		for _, n := range c.State(typ) {
			if !strings.Contains(n, "/"+ns+"/") && !strings.HasPrefix(n, ns+"/") && !strings.HasPrefix(n, "istio-system/") &&
				!strings.HasPrefix(n, "NetworkGateway/") { // network gateways' workloads are named by network
				continue // other cases' leftovers and the harness's probe
			}
			b, err := protojson.MarshalOptions{UseProtoNames: true}.Marshal(c.Resource(typ, n))
			if err != nil {
				return nil, err
			}
			var v any
			if err := json.Unmarshal(b, &v); err != nil {
				return nil, err
			}
			key := n
			if typ == authorizationType {
				key = "authorization/" + n
			}
			out[key] = v
		}
	}
	return out, nil
}
