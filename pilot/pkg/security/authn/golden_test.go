package authn_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/meshplane/istiod/tests/golden"

	"sigs.k8s.io/yaml"

	"github.com/meshplane/istiod/pilot/pkg/security/authn"
	"github.com/meshplane/istiod/pkg/config/protocol"
)

// goldenCase is the first document of testdata/<case>.yaml; the others are
// the PeerAuthentications and RequestAuthentications of the mesh.
type goldenCase struct {
	Description string `json:"description"`
	// Mesh is mesh config YAML over the defaults.
	Mesh  string `json:"mesh"`
	Proxy struct {
		Namespace string            `json:"namespace"`
		Labels    map[string]string `json:"labels"`
		Metadata  map[string]any    `json:"metadata"`
		Gateway   bool              `json:"gateway"`
	} `json:"proxy"`
	// Ports are the proxy's target ports and their declared protocols
	// ("" for undeclared).
	Ports map[uint32]string `json:"ports"`
	// Jwks and Issuers are what the stub resolver knows.
	Jwks    map[string]string `json:"jwks"`
	Issuers map[string]string `json:"issuers"`
	// Destinations are namespaces to report DestinationMode for.
	Destinations []string `json:"destinations"`
	// ShowTLS adds the transport sockets to the output.
	ShowTLS bool `json:"showTLS"`
	HTTP10  bool `json:"http10"`
}

type stubResolver struct{ uris, issuers map[string]string }

func (s stubResolver) Resolve(uri string) (string, bool) { v, ok := s.uris[uri]; return v, ok }
func (s stubResolver) ResolveIssuer(iss string) (string, bool) {
	v, ok := s.issuers[iss]
	return v, ok
}

var _ authn.IssuerJwksResolver = stubResolver{}

type goldenPort struct {
	Port     uint32                 `json:"port"`
	Protocol authn.ListenerProtocol `json:"protocol"`
	Mode     authn.Mode             `json:"mode"`
	Chains   []authn.Chain          `json:"chains"`
}

type goldenOutput struct {
	Description      string                `json:"description,omitempty"`
	MTLS             authn.Policy          `json:"mtls"`
	Inbound          []goldenPort          `json:"inbound,omitempty"`
	Passthrough      []authn.PortChains    `json:"passthrough"`
	Destinations     map[string]authn.Mode `json:"destinations,omitempty"`
	TransportSockets map[string]any        `json:"transportSockets,omitempty"`
	JwtAuthn         any                   `json:"jwtAuthn"`
}

func runGolden(t *testing.T, input []byte) []byte {
	header, rest, _ := bytes.Cut(input, []byte("\n---\n"))
	var c goldenCase
	if err := yaml.UnmarshalStrict(header, &c); err != nil {
		t.Fatalf("header: %v", err)
	}
	m := meshOf(t, c.Mesh)
	push := pushOf(t, m, parseConfigs(t, rest))
	root := push.RootNamespace()
	proxy := sidecar(c.Proxy.Namespace, c.Proxy.Labels)
	for k, v := range c.Proxy.Metadata {
		proxy.Metadata.Raw[k] = v
	}

	pol := authn.ProxyMTLS(push.PeerAuthentications(proxy), authn.MTLSOptions{RootNamespace: root})
	out := goldenOutput{Description: c.Description, MTLS: pol}
	chainOpts := authn.ChainOptions{HTTP10: c.HTTP10}
	var ports []uint32
	for p := range c.Ports {
		ports = append(ports, p)
	}
	sort.Slice(ports, func(i, j int) bool { return ports[i] < ports[j] })
	for _, p := range ports {
		lp := authn.ListenerProtocolOf(protocol.Parse(c.Ports[p]))
		out.Inbound = append(out.Inbound, goldenPort{Port: p, Protocol: lp, Mode: pol.Mode(p), Chains: pol.InboundChains(p, lp, chainOpts)})
	}
	out.Passthrough = pol.Passthrough(ports, chainOpts)
	if len(c.Destinations) > 0 {
		out.Destinations = map[string]authn.Mode{}
		for _, ns := range c.Destinations {
			out.Destinations[ns] = authn.DestinationMode(push, root, ns)
		}
	}
	if c.ShowTLS {
		o := authn.TLSOptionsFromMesh(m)
		o.Certs = authn.ServerCertsFromMetadata(proxy.Metadata)
		tls := authn.NewInboundTLS(o)
		out.TransportSockets = map[string]any{"HTTP": jsonOf(t, tls.HTTP), "TCP": jsonOf(t, tls.TCP)}
	}
	jo := authn.JWTOptions{Resolver: stubResolver{c.Jwks, c.Issuers}, ClearRouteCache: c.Proxy.Gateway}
	if f := authn.JwtFilter(push.RequestAuthentications(proxy), jo); f != nil {
		out.JwtAuthn = jsonOf(t, f)
	}
	b, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return append(b, '\n')
}

// TestGolden runs testdata/<case>.yaml and compares with
// testdata/<case>.golden.json (go test -update rewrites them). A golden
// file without its case fails.
func TestGolden(t *testing.T) {
	inputs, err := filepath.Glob("testdata/*.yaml")
	if err != nil || len(inputs) == 0 {
		t.Fatalf("no cases: %v", err)
	}
	var files golden.Files
	for _, in := range inputs {
		name := strings.TrimSuffix(filepath.Base(in), ".yaml")
		t.Run(name, func(t *testing.T) {
			b, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			files.Check(t, filepath.Join("testdata", name+".golden.json"), runGolden(t, b))
		})
	}
	files.Orphans(t, "testdata/*.golden.json")
}
