package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// meshPort is the one HTTP port every generated service listens on; it is
// also the name of the route configuration the sidecars ask for.
const meshPort = 9080

// Initial weights of the target VirtualService's subsets; each change
// round moves them (changedWeights), and the change is observed as the v2
// weight of that round.
const initialV1, initialV2 = 90, 10

// mesh is the generated directory of Istio config: S services (ServiceEntry
// with a VIP, one HTTP port, workloadSelector), one WorkloadEntry per
// simulated sidecar (so each sidecar is an endpoint of a service), and a
// DestinationRule (subsets v1, v2) and VirtualService (v1/v2 split) per service.
type mesh struct {
	dir        string
	services   int
	namespaces int
	proxies    int
}

func serviceName(i int) string { return fmt.Sprintf("svc-%d", i) }

func (m *mesh) serviceNamespace(i int) string { return fmt.Sprintf("ns-%d", i%m.namespaces) }

func (m *mesh) serviceHost(i int) string {
	return serviceName(i) + "." + m.serviceNamespace(i) + ".svc.cluster.local"
}

// proxy i is a pod of service i%S, version v1 or v2.
func (m *mesh) proxyService(i int) int { return i % m.services }

func proxyVersion(i int) string { return []string{"v1", "v2"}[i%2] }

func proxyIP(i int) string {
	return fmt.Sprintf("10.%d.%d.%d", 1+i/65536, (i/256)%256, i%256)
}

func serviceVIP(i int) string { return fmt.Sprintf("240.240.%d.%d", i/256, i%256) }

// nodeID follows the sidecar convention type~ip~pod.namespace~namespace.svc.domain.
func (m *mesh) nodeID(i int) string {
	ns := m.serviceNamespace(m.proxyService(i))
	return fmt.Sprintf("sidecar~%s~pod-%d.%s~%s.svc.cluster.local", proxyIP(i), i, ns, ns)
}

func (m *mesh) metadata(i int) map[string]any {
	svc := m.proxyService(i)
	return map[string]any{
		"NAMESPACE":     m.serviceNamespace(svc),
		"CLUSTER_ID":    "Kubernetes",
		"ISTIO_VERSION": "1.31.0",
		"INSTANCE_IPS":  proxyIP(i),
		"LABELS":        map[string]any{"app": serviceName(svc), "version": proxyVersion(i)},
	}
}

// The target of the change is service 0.
func (m *mesh) targetVirtualHost() string {
	return fmt.Sprintf("%s:%d", m.serviceHost(0), meshPort)
}

func (m *mesh) targetCluster() string {
	return fmt.Sprintf("outbound|%d|v2|%s", meshPort, m.serviceHost(0))
}

func (m *mesh) vsPath(i int) string {
	return filepath.Join(m.dir, m.serviceNamespace(i), serviceName(i)+"-vs.yaml")
}

// write generates the directory: per namespace a subdirectory, per service
// one file with its ServiceEntry, WorkloadEntries and DestinationRule, and
// one file with its VirtualService (so that the change touches one file).
func (m *mesh) write() error {
	for s := 0; s < m.services; s++ {
		if err := writeAtomic(filepath.Join(m.dir, m.serviceNamespace(s), serviceName(s)+".yaml"), strings.Join(m.serviceDocs(s), "---\n")); err != nil {
			return err
		}
		if err := writeAtomic(m.vsPath(s), m.virtualService(s, initialV1, initialV2)); err != nil {
			return err
		}
	}
	return nil
}

// serviceDocs are the YAML documents of service s but its VirtualService:
// the ServiceEntry, the DestinationRule and one WorkloadEntry per sidecar of
// the service (a static one when it has none).
func (m *mesh) serviceDocs(s int) []string {
	ns, name, host := m.serviceNamespace(s), serviceName(s), m.serviceHost(s)
	docs := []string{fmt.Sprintf(`apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: %s, namespace: %s}
spec:
  hosts: [%s]
  addresses: [%s]
  ports: [{number: %d, name: http, protocol: HTTP}]
  location: MESH_INTERNAL
  resolution: STATIC
  workloadSelector: {labels: {app: %s}}
`, name, ns, host, serviceVIP(s), meshPort, name), fmt.Sprintf(`apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: %s, namespace: %s}
spec:
  host: %s
  trafficPolicy:
    loadBalancer: {simple: LEAST_REQUEST}
    connectionPool: {tcp: {maxConnections: 100}, http: {http2MaxRequests: 1000}}
    outlierDetection: {consecutive5xxErrors: 5, interval: 10s, baseEjectionTime: 30s}
  subsets:
  - {name: v1, labels: {version: v1}}
  - {name: v2, labels: {version: v2}}
`, name, ns, host)}
	// every service has endpoints, even with fewer sidecars than services
	var eps []int
	for p := s; p < m.proxies; p += m.services { // proxyService(p) == s
		eps = append(eps, p)
	}
	if len(eps) == 0 {
		eps = []int{-1 - s}
	}
	for _, p := range eps {
		ip, version, wname := fmt.Sprintf("10.200.%d.%d", s/256, s%256), "v1", name+"-static"
		if p >= 0 {
			ip, version, wname = proxyIP(p), proxyVersion(p), fmt.Sprintf("pod-%d", p)
		}
		docs = append(docs, fmt.Sprintf(`apiVersion: networking.istio.io/v1
kind: WorkloadEntry
metadata: {name: %s, namespace: %s}
spec:
  address: %s
  labels: {app: %s, version: %s}
  serviceAccount: %s
`, wname, ns, ip, name, version, name))
	}
	return docs
}

func (m *mesh) virtualService(i, w1, w2 int) string {
	host := m.serviceHost(i)
	return fmt.Sprintf(`apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: %s, namespace: %s}
spec:
  hosts: [%s]
  http:
  - match: [{headers: {end-user: {exact: tester}}}]
    route: [{destination: {host: %s, subset: v2}}]
  - route:
    - {destination: {host: %s, subset: v1}, weight: %d}
    - {destination: {host: %s, subset: v2}, weight: %d}
    retries: {attempts: 2, perTryTimeout: 1s, retryOn: 5xx}
    timeout: 5s
`, serviceName(i), m.serviceNamespace(i), host, host, host, w1, host, w2)
}

// changedWeights are the target's subset weights after change round r
// (1-based): v2 gets initialV2+r, a value no earlier round had, so a
// sidecar can tell the routes of round r from those of any other.
func changedWeights(r int) (v1, v2 int) { return initialV1 - r, initialV2 + r }

// maxRounds keeps the weights of every round positive.
const maxRounds = initialV1 - 1

// change rewrites the target VirtualService with the weights of round r
// (0: the initial ones).
func (m *mesh) change(r int) error {
	v1, v2 := changedWeights(r)
	return writeAtomic(m.vsPath(0), m.virtualService(0, v1, v2))
}

const meshConfig = `# mesh config of the load test
trustDomain: cluster.local
outboundTrafficPolicy:
  mode: ALLOW_ANY
`

// writeAtomic writes then renames, as editors and ConfigMap volumes do, so
// the watcher never reads a half-written file.
func writeAtomic(path, content string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp := path + ".tmp~"
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
