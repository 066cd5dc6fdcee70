package app

import (
	"fmt"

	meshconfig "istio.io/api/mesh/v1alpha1"

	"github.com/meshplane/istiod/pilot/pkg/config/memory"
	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pilot/pkg/security/authz"
	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/config/schema/collections"
	"github.com/meshplane/istiod/pkg/config/schema/gvk"
)

// noServices is a service registry with nothing in it: the offline
// analysis sees configuration only.
type noServices struct{}

func (noServices) Services() []*model.Service                                     { return nil }
func (noServices) GetService(string) *model.Service                               { return nil }
func (noServices) GetProxyServiceTargets(*model.ProxyQuery) []model.ServiceTarget { return nil }

// ignoredPolicies are the security policies (or fields of them) that
// Istio would accept and ignore, as istiod reports them on
// /debug/warningz, found from the files alone: a snapshot of the valid
// objects under the mesh config. The check that a selector matches some
// workload needs the cluster's workloads and is left out.
func ignoredPolicies(cfgs []config.Config, m *meshconfig.MeshConfig) []string {
	store := memory.New(collections.Pilot)
	for _, c := range cfgs {
		if _, ok := collections.Pilot.FindByGroupKind(c.GroupVersionKind); !ok {
			continue
		}
		_, _ = store.Create(c)
	}
	env := model.NewEnvironment(model.EnvironmentOptions{ConfigStore: store, ServiceDiscovery: noServices{},
		EndpointIndex: model.NewEndpointIndex(), Mesh: func() *meshconfig.MeshConfig { return m }})
	push := model.InitContext(env, nil, &model.PushRequest{Full: true})
	var out []string
	var aps []config.Config
	for _, c := range cfgs {
		if c.GroupVersionKind == gvk.AuthorizationPolicy {
			aps = append(aps, c)
		}
	}
	for _, w := range authz.New(authz.Options{Mesh: m}).Explain(aps) {
		out = append(out, "Warning [policy_translation] "+w.Error())
	}
	for _, p := range push.PolicyProblems() {
		if p.Check == model.PolicyCheckNoWorkload {
			continue
		}
		where := p.Object()
		if p.Field != "" {
			where += " " + p.Field
		}
		out = append(out, fmt.Sprintf("Warning [%s] (%s) %s", p.Check, where, p.Message))
	}
	return out
}
