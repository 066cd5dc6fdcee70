package model

import (
	"strings"
	"testing"

	"google.golang.org/protobuf/types/known/structpb"
)

func TestParseServiceNodeWithMetadata(t *testing.T) {
	md, _ := structpb.NewStruct(map[string]any{
		"NAMESPACE":         "bookinfo",
		"CLUSTER_ID":        "Kubernetes",
		"LABELS":            map[string]any{"app": "productpage", "version": "v1"},
		"ISTIO_VERSION":     "1.31.0",
		"INSTANCE_IPS":      "10.244.0.10,fd00::10",
		"INTERCEPTION_MODE": "REDIRECT",
		"SERVICE_ACCOUNT":   "bookinfo-productpage",
		"WORKLOAD_NAME":     "productpage-v1",
		"UNKNOWN_KEY":       true,
	})
	p, err := ParseServiceNodeWithMetadata("sidecar~10.244.0.10~productpage-v1-abc.bookinfo~bookinfo.svc.cluster.local", md)
	if err != nil {
		t.Fatal(err)
	}
	if p.Type != SidecarProxy || p.ID != "productpage-v1-abc.bookinfo" || p.DNSDomain != "bookinfo.svc.cluster.local" {
		t.Errorf("proxy %+v", p)
	}
	if len(p.IPAddresses) != 2 || p.IPAddresses[1] != "fd00::10" || p.ConfigNamespace != "bookinfo" {
		t.Errorf("ips %v ns %q", p.IPAddresses, p.ConfigNamespace)
	}
	m := p.Metadata
	if m.ClusterID != "Kubernetes" || m.Labels["app"] != "productpage" || m.IstioVersion != "1.31.0" ||
		m.InterceptionMode != "REDIRECT" || m.ServiceAccount != "bookinfo-productpage" || m.WorkloadName != "productpage-v1" {
		t.Errorf("metadata %+v", m)
	}
	if m.Raw["UNKNOWN_KEY"] != true {
		t.Error("raw metadata lost")
	}
}

func TestParseServiceNodeErrors(t *testing.T) {
	bad, _ := structpb.NewStruct(map[string]any{"LABELS": "not-a-map"})
	cases := []struct {
		id   string
		md   *structpb.Struct
		want string
	}{
		{"sidecar~10.0.0.1~a.ns", nil, "want 4 parts"},
		{"gateway~10.0.0.1~a.ns~ns.svc.cluster.local", nil, `invalid node type "gateway"`},
		{"sidecar~not-an-ip~a.ns~ns.svc.cluster.local", nil, `invalid IP address "not-an-ip"`},
		{"sidecar~10.0.0.1~~ns.svc.cluster.local", nil, "empty workload ID"},
		{"router~10.0.0.1~gw.ns~ns.svc.cluster.local", bad, "node metadata"},
	}
	for _, c := range cases {
		_, err := ParseServiceNodeWithMetadata(c.id, c.md)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.id, err, c.want)
		}
	}
	p, err := ParseServiceNodeWithMetadata("router~10.0.0.1~gw-abc.istio-system~istio-system.svc.cluster.local", nil)
	if err != nil || p.Type != Router || p.ConfigNamespace != "istio-system" {
		t.Errorf("router without metadata: %+v %v", p, err)
	}
}
