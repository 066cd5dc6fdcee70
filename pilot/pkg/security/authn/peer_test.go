package authn_test

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"istio.io/api/security/v1beta1"
	typeapi "istio.io/api/type/v1beta1"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pilot/pkg/security/authn"
	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/config/schema/gvk"
	"github.com/meshplane/istiod/pkg/config/schema/kind"
)

const root = "istio-system"

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// apiMode is a level's setting in the tables: absent (no policy), a policy
// without mtls, or a mode (UNSET included).
type apiMode int

const (
	absent apiMode = iota
	noMTLS
	unset
	strict
	permissive
	disable
)

func (a apiMode) String() string {
	return [...]string{"absent", "no-mtls", "UNSET", "STRICT", "PERMISSIVE", "DISABLE"}[a]
}

func (a apiMode) mtls() *v1beta1.PeerAuthentication_MutualTLS {
	switch a {
	case unset:
		return &v1beta1.PeerAuthentication_MutualTLS{Mode: v1beta1.PeerAuthentication_MutualTLS_UNSET}
	case strict:
		return &v1beta1.PeerAuthentication_MutualTLS{Mode: v1beta1.PeerAuthentication_MutualTLS_STRICT}
	case permissive:
		return &v1beta1.PeerAuthentication_MutualTLS{Mode: v1beta1.PeerAuthentication_MutualTLS_PERMISSIVE}
	case disable:
		return &v1beta1.PeerAuthentication_MutualTLS{Mode: v1beta1.PeerAuthentication_MutualTLS_DISABLE}
	}
	return nil
}

// set is the mode a level imposes, if it does.
func (a apiMode) set() (authn.Mode, bool) {
	switch a {
	case strict:
		return authn.ModeStrict, true
	case permissive:
		return authn.ModePermissive, true
	case disable:
		return authn.ModeDisable, true
	}
	return 0, false
}

// pa builds a PeerAuthentication aged seconds after t0.
func pa(ns, name string, age int, selector map[string]string, m apiMode, ports map[uint32]apiMode) config.Config {
	spec := &v1beta1.PeerAuthentication{Mtls: m.mtls()}
	if selector != nil {
		spec.Selector = &typeapi.WorkloadSelector{MatchLabels: selector}
	}
	if ports != nil {
		spec.PortLevelMtls = map[uint32]*v1beta1.PeerAuthentication_MutualTLS{}
		for p, pm := range ports {
			spec.PortLevelMtls[p] = pm.mtls()
			if spec.PortLevelMtls[p] == nil {
				spec.PortLevelMtls[p] = &v1beta1.PeerAuthentication_MutualTLS{}
			}
		}
	}
	return config.Config{
		Meta: config.Meta{GroupVersionKind: gvk.MustFromKind(kind.PeerAuthentication), Name: name, Namespace: ns,
			CreationTimestamp: t0.Add(time.Duration(age) * time.Second)},
		Spec: spec,
	}
}

var app = map[string]string{"app": "a"}

// TestEffectiveMTLSPrecedence runs every combination of mesh, namespace and
// workload settings, with and without port-level settings: the most
// specific level that sets a mode wins, PERMISSIVE when none does; an UNSET
// port takes the workload's result, a set port overrides it.
func TestEffectiveMTLSPrecedence(t *testing.T) {
	levels := []apiMode{absent, noMTLS, unset, strict, permissive, disable}
	portSettings := []apiMode{absent, unset, strict, permissive, disable}
	for _, mesh := range levels {
		for _, ns := range levels {
			for _, wl := range levels {
				for _, port := range portSettings {
					if wl == absent && port != absent {
						continue
					}
					name := fmt.Sprintf("mesh=%v/ns=%v/workload=%v/port=%v", mesh, ns, wl, port)
					var cfgs []config.Config
					if mesh != absent {
						cfgs = append(cfgs, pa(root, "mesh", 0, nil, mesh, nil))
					}
					if ns != absent {
						cfgs = append(cfgs, pa("ns", "default", 0, nil, ns, nil))
					}
					if wl != absent {
						var ports map[uint32]apiMode
						if port != absent {
							ports = map[uint32]apiMode{8080: port}
						}
						cfgs = append(cfgs, pa("ns", "wl", 0, app, wl, ports))
					}
					want := authn.ModePermissive
					for _, l := range []apiMode{mesh, ns, wl} {
						if m, ok := l.set(); ok {
							want = m
						}
					}
					wantPort := want
					if m, ok := port.set(); ok {
						wantPort = m
					}
					got := authn.ProxyMTLS(cfgs, authn.MTLSOptions{RootNamespace: root})
					if got.Workload != want || got.Mode(9090) != want || got.Mode(0) != want || got.Mode(8080) != wantPort {
						t.Errorf("%s: workload %v, 9090 %v, 0 %v, 8080 %v; want %v, port %v",
							name, got.Workload, got.Mode(9090), got.Mode(0), got.Mode(8080), want, wantPort)
					}
					if (port != absent) != (len(got.Ports) == 1) {
						t.Errorf("%s: ports %v", name, got.Ports)
					}
				}
			}
		}
	}
}

func TestEffectiveMTLSCases(t *testing.T) {
	cases := []struct {
		name string
		cfgs []config.Config
		want authn.Policy
	}{
		{name: "none", want: authn.Policy{Workload: authn.ModePermissive}},
		{
			name: "port level on a namespace-wide policy is ignored",
			cfgs: []config.Config{pa("ns", "default", 0, nil, strict, map[uint32]apiMode{80: disable})},
			want: authn.Policy{Workload: authn.ModeStrict},
		},
		{
			name: "port level on a mesh-wide policy is ignored",
			cfgs: []config.Config{pa(root, "default", 0, nil, disable, map[uint32]apiMode{80: strict})},
			want: authn.Policy{Workload: authn.ModeDisable},
		},
		{
			name: "selector policy in the root namespace applies to nothing",
			cfgs: []config.Config{pa(root, "sel", 0, app, disable, map[uint32]apiMode{80: strict}), pa(root, "default", 1, nil, strict, nil)},
			want: authn.Policy{Workload: authn.ModeStrict},
		},
		{
			name: "empty selector is namespace-wide",
			cfgs: []config.Config{pa("ns", "empty", 0, map[string]string{}, disable, map[uint32]apiMode{80: strict})},
			want: authn.Policy{Workload: authn.ModeDisable},
		},
		{
			name: "oldest namespace-wide wins",
			cfgs: []config.Config{pa("ns", "new", 5, nil, strict, nil), pa("ns", "old", 1, nil, disable, nil)},
			want: authn.Policy{Workload: authn.ModeDisable},
		},
		{
			name: "oldest mesh-wide wins, even if UNSET",
			cfgs: []config.Config{pa(root, "new", 5, nil, disable, nil), pa(root, "old", 1, nil, unset, nil)},
			want: authn.Policy{Workload: authn.ModePermissive},
		},
		{
			name: "oldest workload wins with its ports only",
			cfgs: []config.Config{
				pa("ns", "new", 5, app, disable, map[uint32]apiMode{90: strict}),
				pa("ns", "old", 1, app, strict, map[uint32]apiMode{80: permissive, 81: unset}),
			},
			want: authn.Policy{Workload: authn.ModeStrict, Ports: map[uint32]authn.Mode{80: authn.ModePermissive, 81: authn.ModeStrict}},
		},
		{
			name: "same age: the first in the list wins",
			cfgs: []config.Config{pa("ns", "b", 0, app, disable, nil), pa("ns", "a", 0, app, strict, nil)},
			want: authn.Policy{Workload: authn.ModeDisable},
		},
		{
			name: "UNSET port inherits the inherited workload mode",
			cfgs: []config.Config{pa(root, "m", 0, nil, disable, nil), pa("ns", "w", 0, app, noMTLS, map[uint32]apiMode{80: unset, 81: strict})},
			want: authn.Policy{Workload: authn.ModeDisable, Ports: map[uint32]authn.Mode{80: authn.ModeDisable, 81: authn.ModeStrict}},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := authn.ProxyMTLS(c.cfgs, authn.MTLSOptions{RootNamespace: root})
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("got %+v, want %+v", got, c.want)
			}
		})
	}
}

func TestLayerPeerAuthentications(t *testing.T) {
	cfgs := []config.Config{
		pa("ns", "w2", 3, app, strict, nil),
		pa("ns", "w1", 2, app, strict, nil),
		pa("ns", "n", 1, nil, strict, nil),
		pa(root, "m", 1, nil, strict, nil),
		pa(root, "sel", 0, app, strict, nil),
	}
	l := authn.LayerPeerAuthentications(cfgs, root)
	if l.Root.Name != "m" || l.Namespace.Name != "n" || l.Workload.Name != "w1" {
		t.Errorf("layers %s/%s/%s, want m/n/w1", l.Root.Name, l.Namespace.Name, l.Workload.Name)
	}
	if l := authn.LayerPeerAuthentications(nil, root); l != (model.LayeredPolicies{}) {
		t.Errorf("no policies: %+v", l)
	}
	// A workload layer in the root namespace (as the model's layering gives
	// a proxy there) is ignored.
	w := pa(root, "sel", 0, app, disable, map[uint32]apiMode{80: strict})
	got := authn.EffectiveMTLS(model.LayeredPolicies{Workload: &w}, authn.MTLSOptions{RootNamespace: root})
	if !reflect.DeepEqual(got, authn.Policy{Workload: authn.ModePermissive}) {
		t.Errorf("root workload layer: %+v", got)
	}
}

func TestPortLevel(t *testing.T) {
	p := authn.Policy{Workload: authn.ModeStrict, Ports: map[uint32]authn.Mode{9102: authn.ModePermissive, 80: authn.ModeDisable}}
	if got := p.PortLevel(); !reflect.DeepEqual(got, []uint32{80, 9102}) {
		t.Errorf("PortLevel %v", got)
	}
	if m := (authn.Policy{}).Mode(80); m != authn.ModePermissive {
		t.Errorf("zero policy: %v", m)
	}
}

func TestDestinationMode(t *testing.T) {
	cases := []struct {
		name string
		cfgs []config.Config
		ns   string
		want authn.Mode
	}{
		{name: "nothing", ns: "ns", want: authn.ModePermissive},
		{name: "mesh", cfgs: []config.Config{pa(root, "m", 0, nil, strict, nil)}, ns: "ns", want: authn.ModeStrict},
		{name: "mesh UNSET", cfgs: []config.Config{pa(root, "m", 0, nil, unset, nil)}, ns: "ns", want: authn.ModePermissive},
		{name: "namespace over mesh", cfgs: []config.Config{pa(root, "m", 0, nil, strict, nil), pa("ns", "d", 0, nil, disable, nil)}, ns: "ns", want: authn.ModeDisable},
		{name: "namespace UNSET inherits", cfgs: []config.Config{pa(root, "m", 0, nil, disable, nil), pa("ns", "d", 0, nil, noMTLS, nil)}, ns: "ns", want: authn.ModeDisable},
		{name: "workload DISABLE is not seen", cfgs: []config.Config{pa("ns", "d", 0, nil, strict, nil), pa("ns", "w", 0, app, disable, nil)}, ns: "ns", want: authn.ModeStrict},
		{name: "other namespace's policy is not seen", cfgs: []config.Config{pa("other", "d", 0, nil, disable, nil)}, ns: "ns", want: authn.ModePermissive},
		{name: "oldest namespace-wide", cfgs: []config.Config{pa("ns", "new", 2, nil, strict, nil), pa("ns", "old", 1, nil, disable, nil)}, ns: "ns", want: authn.ModeDisable},
		{name: "root namespace itself", cfgs: []config.Config{pa(root, "m", 0, nil, disable, nil)}, ns: root, want: authn.ModeDisable},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			by := authn.PeerAuthenticationsByNamespace{}
			for _, cfg := range c.cfgs {
				by[cfg.Namespace] = append(by[cfg.Namespace], cfg)
			}
			if got := authn.DestinationMode(by, root, c.ns); got != c.want {
				t.Errorf("got %v, want %v", got, c.want)
			}
		})
	}
}
