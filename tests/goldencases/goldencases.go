// Package goldencases reads the table of the generators' golden cases
// (pilot/pkg/xds/generators/testdata/cases.yaml): for each case, the proxy
// that connects (node ID, namespace, labels, more node metadata), the mesh
// config and control plane switches it is served under, and the route
// configurations it asks for. The case's objects are testdata/<name>.yaml
// beside the table.
//
// Two tests read it: the generators' golden test (TestGoldens, which
// writes what our generators send into testdata/<name>.<type>.golden.json)
// and tests/differential's TestGolden, which serves each case's objects
// from two API servers through our istiod and Istio's pilot-discovery and
// compares what both send the same proxy.
package goldencases

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"sigs.k8s.io/yaml"
)

// File is the table's path from the repository root.
const File = "pilot/pkg/xds/generators/testdata/cases.yaml"

// Case is one golden case.
type Case struct {
	// Name names the case and its files: testdata/<name>.yaml holds its
	// objects, testdata/<name>.<type>.golden.json what our generators send.
	Name string `json:"name"`
	// Group names the test family a case belongs to, for the tests that
	// run over one family ("dfp", "upstream-tls", ...); "" for none.
	Group string `json:"group,omitempty"`
	// NodeID is the proxy's node ID (type~ip~pod.namespace~namespace.svc.cluster.local).
	NodeID string `json:"nodeID"`
	// Namespace is the proxy's NAMESPACE.
	Namespace string `json:"namespace"`
	// Labels are the proxy's LABELS.
	Labels map[string]string `json:"labels,omitempty"`
	// Meta is more node metadata (INTERCEPTION_MODE, UNPRIVILEGED_POD, ...).
	Meta map[string]any `json:"meta,omitempty"`
	// Mesh is mesh config YAML applied over the defaults.
	Mesh string `json:"mesh,omitempty"`
	// Routes are the route configurations the golden test asks for.
	Routes []string `json:"routes,omitempty"`
	// SidecarIngressTLS is ENABLE_TLS_ON_SIDECAR_INGRESS.
	SidecarIngressTLS bool `json:"sidecarIngressTLS,omitempty"`
	// DualStack is ISTIO_DUAL_STACK.
	DualStack bool `json:"dualStack,omitempty"`
	// Protocols are the PILOT_ENABLE_{REDIS,MYSQL}_FILTER switches.
	Protocols Protocols `json:"protocols,omitzero"`
	// HashAllocate is PILOT_ENABLE_IP_AUTOALLOCATE=false: ServiceEntries
	// without addresses get the registry's older hashed ones.
	HashAllocate bool `json:"hashAllocate,omitempty"`
}

// Protocols are the protocol filter switches of a case.
type Protocols struct {
	Redis bool `json:"redis,omitempty"`
	MySQL bool `json:"mysql,omitempty"`
}

// Env is the control plane environment the case's switches stand for,
// as Istio's pilot-discovery reads it (sorted, NAME=value).
func (c Case) Env() []string {
	var env []string
	for _, e := range []struct {
		name string
		on   bool
	}{
		{"ENABLE_TLS_ON_SIDECAR_INGRESS", c.SidecarIngressTLS},
		{"ISTIO_DUAL_STACK", c.DualStack},
		{"PILOT_ENABLE_MYSQL_FILTER", c.Protocols.MySQL},
		{"PILOT_ENABLE_REDIS_FILTER", c.Protocols.Redis},
	} {
		if e.on {
			env = append(env, e.name+"=true")
		}
	}
	if c.HashAllocate {
		env = append(env, "PILOT_ENABLE_IP_AUTOALLOCATE=false")
	}
	return env
}

// Proxy is the node ID taken apart: type, IP, pod name and namespace.
func (c Case) Proxy() (typ, ip, pod, ns string, err error) {
	parts := strings.Split(c.NodeID, "~")
	if len(parts) != 4 {
		return "", "", "", "", fmt.Errorf("case %s: node ID %q is not type~ip~pod.namespace~domain", c.Name, c.NodeID)
	}
	pod, ns, ok := strings.Cut(parts[2], ".")
	if !ok {
		return "", "", "", "", fmt.Errorf("case %s: node ID %q names no pod namespace", c.Name, c.NodeID)
	}
	return parts[0], parts[1], pod, ns, nil
}

// Load reads the table at path.
func Load(path string) ([]Case, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var cases []Case
	if err := yaml.UnmarshalStrict(b, &cases); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	seen := map[string]bool{}
	for _, c := range cases {
		if c.Name == "" || c.NodeID == "" || c.Namespace == "" {
			return nil, fmt.Errorf("%s: a case without name, nodeID or namespace: %+v", path, c)
		}
		if seen[c.Name] {
			return nil, fmt.Errorf("%s: case %s twice", path, c.Name)
		}
		seen[c.Name] = true
		if _, _, _, _, err := c.Proxy(); err != nil {
			return nil, fmt.Errorf("%s: %v", path, err)
		}
	}
	return cases, nil
}

// ObjectsFile is the path of a case's objects beside the table at path.
func ObjectsFile(path, name string) string {
	return filepath.Join(filepath.Dir(path), name+".yaml")
}
