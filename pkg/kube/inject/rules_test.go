package inject_test

import (
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/wrapperspb"
	meshconfig "istio.io/api/mesh/v1alpha1"
	networking "istio.io/api/networking/v1beta1"
	typev1beta1 "istio.io/api/type/v1beta1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/meshplane/istiod/pkg/config/mesh"
	"github.com/meshplane/istiod/pkg/kube/inject"
)

func TestRequired(t *testing.T) {
	never := []metav1.LabelSelector{{MatchLabels: map[string]string{"never": "yes"}}}
	always := []metav1.LabelSelector{{MatchLabels: map[string]string{"always": "yes"}}}
	cases := []struct {
		name        string
		policy      inject.Policy
		ns          string
		hostNetwork bool
		labels      map[string]string
		annotations map[string]string
		want        bool
	}{
		{"enabled by default", inject.PolicyEnabled, "app", false, nil, nil, true},
		{"disabled by default", inject.PolicyDisabled, "app", false, nil, nil, false},
		{"unknown policy", "sometimes", "app", false, nil, map[string]string{"sidecar.istio.io/inject": "true"}, false},
		{"hostNetwork", inject.PolicyEnabled, "app", true, nil, nil, false},
		{"kube-system", inject.PolicyEnabled, "kube-system", false, nil, nil, false},
		{"local-path-storage", inject.PolicyEnabled, "local-path-storage", false, nil, nil, false},
		{"annotation false", inject.PolicyEnabled, "app", false, nil, map[string]string{"sidecar.istio.io/inject": "false"}, false},
		{"annotation true, policy disabled", inject.PolicyDisabled, "app", false, nil, map[string]string{"sidecar.istio.io/inject": "true"}, true},
		{"label wins over annotation", inject.PolicyEnabled, "app", false, map[string]string{"sidecar.istio.io/inject": "false"},
			map[string]string{"sidecar.istio.io/inject": "true"}, false},
		{"invalid value: default", inject.PolicyDisabled, "app", false, map[string]string{"sidecar.istio.io/inject": "yes"}, nil, false},
		{"never selector", inject.PolicyEnabled, "app", false, map[string]string{"never": "yes"}, nil, false},
		{"always selector", inject.PolicyDisabled, "app", false, map[string]string{"always": "yes"}, nil, true},
		{"never wins over always", inject.PolicyDisabled, "app", false, map[string]string{"never": "yes", "always": "yes"}, nil, false},
		{"explicit true over never", inject.PolicyEnabled, "app", false, map[string]string{"never": "yes", "sidecar.istio.io/inject": "true"}, nil, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := &inject.Config{Policy: c.policy, NeverInjectSelector: never, AlwaysInjectSelector: always}
			meta := &metav1.ObjectMeta{Name: "p", Namespace: c.ns, Labels: c.labels, Annotations: c.annotations}
			if got := inject.Required(cfg, &corev1.PodSpec{HostNetwork: c.hostNetwork}, meta); got != c.want {
				t.Errorf("Required = %v, want %v", got, c.want)
			}
		})
	}
}

type nodesOf []*corev1.Node

func (n nodesOf) Node(name string) *corev1.Node { return staticNodes(n).Node(name) }
func (n nodesOf) Nodes() []*corev1.Node         { return n }

func TestDetectNativeSidecar(t *testing.T) {
	old, recent, odd := kubeletNode("old", "v1.31.6"), kubeletNode("new", "v1.33.1-gke.100"), kubeletNode("odd", "weird")
	cases := []struct {
		name  string
		mode  inject.NativeSidecarMode
		nodes inject.NodeLister
		node  string
		want  bool
	}{
		{"forced on", inject.NativeSidecarsEnabled, nodesOf{old}, "", true},
		{"forced off", inject.NativeSidecarsDisabled, nodesOf{recent}, "", false},
		{"no lister", inject.NativeSidecarsAuto, nil, "", false},
		{"no nodes", inject.NativeSidecarsAuto, nodesOf{}, "", true},
		{"all recent", inject.NativeSidecarsAuto, nodesOf{recent}, "", true},
		{"one old", inject.NativeSidecarsAuto, nodesOf{recent, old}, "", false},
		{"pod's node recent", inject.NativeSidecarsAuto, nodesOf{recent, old}, "new", true},
		{"pod's node old", inject.NativeSidecarsAuto, nodesOf{recent, old}, "old", false},
		{"pod's node unknown: all", inject.NativeSidecarsAuto, nodesOf{recent}, "gone", true},
		{"unparsable version", inject.NativeSidecarsAuto, nodesOf{odd}, "", false},
	}
	for _, c := range cases {
		if got := inject.DetectNativeSidecar(c.mode, c.nodes, c.node); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
	for in, want := range map[string]inject.NativeSidecarMode{"": "auto", "true": "true", "1": "true", "false": "false", "auto": "auto"} {
		if got := inject.ParseNativeSidecarMode(in); got != want {
			t.Errorf("ParseNativeSidecarMode(%q) = %s, want %s", in, got, want)
		}
	}
}

// TestEffectiveProxyConfig: mesh defaultConfig, then the root namespace's
// ProxyConfig, the pod namespace's, and the workload's (which beats the
// pod's annotation); the oldest resource of a kind wins.
func TestEffectiveProxyConfig(t *testing.T) {
	m := mesh.DefaultMeshConfig()
	m.DefaultConfig.ProxyMetadata = map[string]string{"A": "mesh", "B": "mesh"}
	t0 := time.Unix(1000, 0)
	pc := func(ns, name string, age int, sel map[string]string, conc int32, env map[string]string) inject.ProxyConfigResource {
		spec := &networking.ProxyConfig{Concurrency: wrapperspb.Int32(conc), EnvironmentVariables: env}
		if sel != nil {
			spec.Selector = &typev1beta1.WorkloadSelector{MatchLabels: sel}
		}
		return inject.ProxyConfigResource{Namespace: ns, Name: name, Created: t0.Add(time.Duration(age) * time.Second), Spec: spec}
	}
	pcs := inject.NewProxyConfigs([]inject.ProxyConfigResource{
		pc("istio-system", "global", 0, nil, 1, map[string]string{"B": "root"}),
		pc("app", "ns-newer", 2, nil, 9, nil),
		pc("app", "ns", 1, nil, 2, map[string]string{"C": "ns"}),
		pc("app", "workload", 1, map[string]string{"app": "w"}, 3, nil),
	})
	check := func(name string, got *meshconfig.ProxyConfig, conc int32, meta map[string]string) {
		t.Helper()
		if got.GetConcurrency().GetValue() != conc {
			t.Errorf("%s: concurrency %v, want %d", name, got.GetConcurrency(), conc)
		}
		for k, v := range meta {
			if got.ProxyMetadata[k] != v {
				t.Errorf("%s: proxyMetadata %v, want %s=%s", name, got.ProxyMetadata, k, v)
			}
		}
		if got.DiscoveryAddress != "istiod.istio-system.svc:15012" {
			t.Errorf("%s: the mesh defaults were lost: %v", name, got)
		}
	}
	check("namespace", inject.EffectiveProxyConfig(m, pcs, "app", nil, nil), 2, map[string]string{"A": "mesh", "B": "root", "C": "ns"})
	check("other namespace", inject.EffectiveProxyConfig(m, pcs, "other", map[string]string{"app": "w"}, nil), 1, map[string]string{"B": "root"})
	ann := map[string]string{"proxy.istio.io/config": "concurrency: 7\nproxyMetadata: {D: ann}"}
	check("workload over annotation", inject.EffectiveProxyConfig(m, pcs, "app", map[string]string{"app": "w"}, ann), 3, map[string]string{"D": "ann"})
	check("annotation over namespace", inject.EffectiveProxyConfig(m, pcs, "app", nil, ann), 7, map[string]string{"C": "ns", "D": "ann"})
	check("invalid annotation ignored", inject.EffectiveProxyConfig(m, pcs, "app", nil, map[string]string{"proxy.istio.io/config": "[x"}), 2, nil)
	if m.DefaultConfig.Concurrency != nil {
		t.Error("the mesh config was modified")
	}
}
