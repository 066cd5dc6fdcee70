package model_test

import (
	"testing"

	meshconfig "istio.io/api/mesh/v1alpha1"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pkg/config/mesh"
)

func TestClusterLocalHosts(t *testing.T) {
	setting := func(local bool, hosts ...string) *meshconfig.MeshConfig_ServiceSettings {
		return &meshconfig.MeshConfig_ServiceSettings{Hosts: hosts, Settings: &meshconfig.MeshConfig_ServiceSettings_Settings{ClusterLocal: local}}
	}
	for _, tc := range []struct {
		name     string
		settings []*meshconfig.MeshConfig_ServiceSettings
		local    map[string]bool
	}{
		{name: "defaults", local: map[string]bool{
			"kube-dns.kube-system.svc.cluster.local":  true,
			"kubernetes.default.svc.cluster.local":    true,
			"istiod.istio-system.svc.cluster.local":   true, // the discovery address
			"reviews.bookinfo.svc.cluster.local":      false,
			"other.default.svc.cluster.local":         false,
			"kube-dns.kube-system.svc.cluster.local.": false,
		}},
		{name: "a default removed", settings: []*meshconfig.MeshConfig_ServiceSettings{setting(false, "*.kube-system.svc.cluster.local")},
			local: map[string]bool{"kube-dns.kube-system.svc.cluster.local": false, "kubernetes.default.svc.cluster.local": true}},
		{name: "one host under a removed default", settings: []*meshconfig.MeshConfig_ServiceSettings{setting(false, "metrics.kube-system.svc.cluster.local")},
			local: map[string]bool{"metrics.kube-system.svc.cluster.local": false, "kube-dns.kube-system.svc.cluster.local": false}},
		{name: "the most specific wildcard wins", settings: []*meshconfig.MeshConfig_ServiceSettings{
			setting(true, "*.svc.cluster.local"), setting(false, "*.bookinfo.svc.cluster.local"), setting(true, "ratings.bookinfo.svc.cluster.local")},
			local: map[string]bool{"a.ns.svc.cluster.local": true, "reviews.bookinfo.svc.cluster.local": false, "ratings.bookinfo.svc.cluster.local": true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := mesh.DefaultMeshConfig()
			m.ServiceSettings = tc.settings
			hosts := model.NewClusterLocalHosts(m, "cluster.local")
			for h, want := range tc.local {
				if got := hosts.IsClusterLocal(h); got != want {
					t.Errorf("%s: cluster-local %v, want %v", h, got, want)
				}
			}
		})
	}
}
