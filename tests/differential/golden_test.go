package differential_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/meshplane/istiod/tests/differential"
	"github.com/meshplane/istiod/tests/goldencases"
	"github.com/meshplane/istiod/tests/kube"
)

// TestGolden runs every golden case of the generators
// (pilot/pkg/xds/generators/testdata/cases.yaml, see tests/goldencases)
// through both control planes: the case file's objects applied to both
// API servers, the case's proxy (its node ID's type, IP, pod and
// namespace, its labels and metadata) connected to both, under the case's
// mesh config (over MeshConfig) and switches (ENABLE_TLS_ON_SIDECAR_INGRESS,
// ISTIO_DUAL_STACK, PILOT_ENABLE_{REDIS,MYSQL}_FILTER), every CDS, EDS,
// LDS and RDS resource compared. Cases of one mesh config and environment
// run together, the default ones last (each change restarts both control
// planes). The golden files are our output alone; this is what checks it
// against Istio's.
func TestGolden(t *testing.T) {
	root, err := kube.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	table := filepath.Join(root, goldencases.File)
	cases, err := goldencases.Load(table)
	if err != nil {
		t.Fatal(err)
	}
	f := differential.Shared(t)
	for _, gc := range byPlaneConfig(cases) {
		t.Run(gc.Name, func(t *testing.T) {
			if why, ok := goldenNotChecked[gc.Name]; ok {
				t.Skipf("not checked against Istio: %s", why)
			}
			objects, err := os.ReadFile(goldencases.ObjectsFile(table, gc.Name))
			if err != nil {
				t.Fatal(err)
			}
			typ, ip, pod, ns, err := gc.Proxy()
			if err != nil {
				t.Fatal(err)
			}
			f.Run(t, differential.Case{
				Name:    "golden " + gc.Name,
				Objects: string(objects) + goldenExtraObjects(t, gc.Name),
				Proxy: differential.Proxy{Type: typ, IP: ip, Pod: pod, Namespace: ns, Labels: gc.Labels,
					Metadata: gc.Meta},
				Mesh: gc.Mesh,
				Env:  gc.Env(),
				// several cases' Sidecars hide the proxy's namespace
				Probe:   true,
				Allowed: goldenAllowed[gc.Name],
			})
		})
	}
}

// byPlaneConfig orders the cases by mesh config and environment, the
// default (none) last, each group in the table's order.
func byPlaneConfig(cases []goldencases.Case) []goldencases.Case {
	key := func(c goldencases.Case) string {
		if c.Mesh == "" && len(c.Env()) == 0 {
			return ""
		}
		return c.Mesh + "\x00" + strings.Join(c.Env(), "\n")
	}
	var keys []string
	for _, c := range cases {
		if k := key(c); k != "" && !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
	}
	keys = append(keys, "")
	var out []goldencases.Case
	for _, k := range keys {
		for _, c := range cases {
			if key(c) == k {
				out = append(out, c)
			}
		}
	}
	return out
}

// goldenNotChecked are the golden cases not run against Istio, each with
// the reason.
var goldenNotChecked = map[string]string{
	"sidecar-conflicts": "Istio's pilot-discovery sends listener 127.0.0.1_9080 twice in one LDS response " +
		"(the Sidecar's clashing ingress and egress listeners), which the harness's ADS client refuses as Envoy would",
}

// each is one allowed difference per resource, with the same name, type,
// path and reason.
func each(name, typ, path, why string, resources ...string) []differential.Allowed {
	var out []differential.Allowed
	for _, r := range resources {
		out = append(out, differential.Allowed{Name: name + " " + r, Type: typ, Resource: r, Path: path, Why: why})
	}
	return out
}

// whyDNSLookupFamily explains the DNS clusters of dual-stack proxies.
const whyDNSLookupFamily = "a dual-stack proxy (INSTANCE_IPS of both families, ISTIO_DUAL_STACK on: Istio's own listeners carry the " +
	"IPv6 additional addresses) gets ALL from SelectDNSLookupFamily, which ours sends; Istio's pilot-discovery sends " +
	"V4_ONLY in some runs and ALL in others for the same inputs (seen on both dual-stack cases), which points at a " +
	"cluster built for another proxy state and reused (cause not yet found)"

// goldenAllowed are the differences from Istio each golden case accepts.
var goldenAllowed = map[string][]differential.Allowed{
	"sidecar-dual-stack": {
		{Name: "dns-lookup-family", Type: "cds", Resource: "outbound|6379||cache.example.com", Path: "dnsLookupFamily", Intermittent: true,
			Why: whyDNSLookupFamily},
	},
	"sidecar-dual-stack-vips": {
		{Name: "dns-lookup-family", Type: "cds", Resource: "outbound|*||*.example.com", Path: "dnsLookupFamily", Intermittent: true,
			Why: whyDNSLookupFamily},
		{Name: "address-per-service-endpoints", Type: "cds", Resource: "outbound|9443||payments.example.com", Path: "loadAssignment.endpoints[0]",
			Why: "Istio makes one service per ServiceEntry address (convertServices) and keeps both in the sidecar scope: " +
				"its DNS cluster lists the host once per address; ours keeps one service per hostname"},
		{Name: "address-per-service-listener", Type: "lds", Resource: "2001:db8::40_9443", Path: "",
			Why: "Istio makes one service per ServiceEntry address and gives the TCP port a listener on each " +
				"(10.96.40.1_9443 and 2001:db8::40_9443); ours keeps one service per hostname, the first address's listener"},
	},
	"gateway-servers": {{Name: "scoped-redirect-host", Type: "rds", Resource: "http.80", Path: "virtualHosts[name=shop/old.example.com:80]",
		Why: "an httpsRedirect server's namespace-scoped host (./old.example.com): Istio makes a virtual host whose domain is " +
			"\"shop/old.example.com\" (matching no request); ours takes the host (route/gateway.go)"}},
}

// goldenExtraObjects are objects a case needs in an API server that the
// generators' golden test does without: the TLS Secrets behind a gateway
// server's credentialName (the golden test checks no credentials; our
// istiod leaves out a server whose Secret it cannot read, Istio's keeps
// it either way), in the router's namespace.
func goldenExtraObjects(t *testing.T, name string) string {
	secrets := map[string][]string{"gateway-servers": {"shop-cert", "admin-cert", "other-cert"}}[name]
	if len(secrets) == 0 {
		return ""
	}
	crt, key := selfSigned(t)
	var b strings.Builder
	for _, n := range secrets {
		b.WriteString("\n---\napiVersion: v1\nkind: Secret\nmetadata: {name: " + n + ", namespace: istio-system}\n" +
			"type: kubernetes.io/tls\ndata:\n  tls.crt: " + crt + "\n  tls.key: " + key + "\n  ca.crt: " + crt + "\n")
	}
	return b.String()
}

// selfSigned is a self-signed CA certificate and its key, PEM in base64.
func selfSigned(t *testing.T) (crt, key string) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "golden.example.com"},
		DNSNames: []string{"golden.example.com"}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	kd, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	enc := func(typ string, b []byte) string {
		return base64.StdEncoding.EncodeToString(pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: b}))
	}
	return enc("CERTIFICATE", der), enc("EC PRIVATE KEY", kd)
}
