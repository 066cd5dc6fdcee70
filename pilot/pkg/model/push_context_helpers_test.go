package model_test

import (
	"fmt"
	"testing"
	"time"

	meshconfig "istio.io/api/mesh/v1alpha1"

	"github.com/meshplane/istiod/pilot/pkg/config/memory"
	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/config/mesh"
	"github.com/meshplane/istiod/pkg/config/schema/collections"
	"github.com/meshplane/istiod/pkg/config/schema/gvk"
	"github.com/meshplane/istiod/pkg/config/schema/kind"
)

// pcT0 is the creation time of the oldest test object.
var pcT0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// pcDiscovery is a ServiceDiscovery over a fixed list.
type pcDiscovery struct{ services []*model.Service }

func (d *pcDiscovery) Services() []*model.Service { return d.services }

func (d *pcDiscovery) GetService(h string) *model.Service {
	for _, s := range d.services {
		if s.Hostname == h {
			return s
		}
	}
	return nil
}

func (d *pcDiscovery) GetProxyServiceTargets(*model.ProxyQuery) []model.ServiceTarget { return nil }

// pcEnv is a test environment: a memory store, a service list and a mesh
// config the test may replace.
type pcEnv struct {
	t     testing.TB
	store *memory.Store
	disc  *pcDiscovery
	mesh  *meshconfig.MeshConfig
	env   *model.Environment
	eps   *model.EndpointIndex
}

func newPCEnv(t testing.TB) *pcEnv {
	e := &pcEnv{t: t, store: memory.New(collections.Pilot), disc: &pcDiscovery{}, mesh: mesh.DefaultMeshConfig(), eps: model.NewEndpointIndex()}
	e.env = model.NewEnvironment(model.EnvironmentOptions{
		ConfigStore: e.store, ServiceDiscovery: e.disc,
		Mesh:          func() *meshconfig.MeshConfig { return e.mesh },
		EndpointIndex: e.eps,
	})
	return e
}

// create stores a config of kind k; age orders objects (creation time
// pcT0 + age seconds).
func (e *pcEnv) create(k kind.Kind, ns, name string, age int, spec config.Spec) config.Config {
	e.t.Helper()
	cfg := config.Config{
		Meta: config.Meta{
			GroupVersionKind: gvk.MustFromKind(k), Name: name, Namespace: ns,
			CreationTimestamp: pcT0.Add(time.Duration(age) * time.Second),
		},
		Spec: spec,
	}
	if _, err := e.store.Create(cfg); err != nil {
		e.t.Fatalf("create %s %s/%s: %v", k, ns, name, err)
	}
	return *e.store.Get(cfg.GroupVersionKind, name, ns)
}

// update replaces the spec of a stored config.
func (e *pcEnv) update(k kind.Kind, ns, name string, spec config.Spec) {
	e.t.Helper()
	cur := e.store.Get(gvk.MustFromKind(k), name, ns)
	if cur == nil {
		e.t.Fatalf("update: %s %s/%s not found", k, ns, name)
	}
	next := cur.DeepCopy()
	next.Spec = spec
	next.ResourceVersion = ""
	if _, err := e.store.Update(next); err != nil {
		e.t.Fatalf("update %s %s/%s: %v", k, ns, name, err)
	}
}

// addService registers a service of registry r.
func (e *pcEnv) addService(host, ns string, age int, mutate ...func(*model.Service)) *model.Service {
	s := &model.Service{
		Hostname:     host,
		Ports:        model.PortList{{Name: "http", Port: 80, Protocol: "HTTP"}},
		CreationTime: pcT0.Add(time.Duration(age) * time.Second),
		Attributes:   model.ServiceAttributes{ServiceRegistry: model.Kubernetes, Name: host, Namespace: ns},
	}
	for _, m := range mutate {
		m(s)
	}
	e.disc.services = append(e.disc.services, s)
	return s
}

// svcHost is the FQDN of a Kubernetes service.
func svcHost(name, ns string) string { return fmt.Sprintf("%s.%s.svc.cluster.local", name, ns) }

// push builds a first snapshot.
func (e *pcEnv) push() *model.PushContext { return model.InitContext(e.env, nil, nil) }

// pcFull is a full request naming keys.
func pcFull(keys ...model.ConfigKey) *model.PushRequest {
	return &model.PushRequest{Full: true, ConfigsUpdated: model.NewConfigKeys(keys...), Reason: model.NewReasonStats(model.ConfigUpdate)}
}

func pcKey(k kind.Kind, ns, name string) model.ConfigKey {
	return model.ConfigKey{Kind: k, Namespace: ns, Name: name}
}

func sidecarProxy(ns string, labels map[string]string) *model.Proxy {
	return &model.Proxy{Type: model.SidecarProxy, ConfigNamespace: ns, Labels: labels, ID: "pod." + ns}
}

func gatewayProxy(ns string, labels map[string]string) *model.Proxy {
	return &model.Proxy{Type: model.Router, ConfigNamespace: ns, Labels: labels, ID: "gw." + ns}
}

func configNames(cfgs []config.Config) []string {
	out := make([]string, 0, len(cfgs))
	for _, c := range cfgs {
		out = append(out, c.Namespace+"/"+c.Name)
	}
	return out
}

func ptrNames(cfgs []*config.Config) []string {
	out := make([]string, 0, len(cfgs))
	for _, c := range cfgs {
		out = append(out, c.Namespace+"/"+c.Name)
	}
	return out
}
