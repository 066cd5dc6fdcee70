package gateway_test

import (
	"testing"

	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/meshplane/istiod/pilot/pkg/config/kube/gateway"
	"github.com/meshplane/istiod/pkg/config"
)

// PILOT_MULTI_NETWORK_DISCOVER_GATEWAY_API=false (NoRemoteClass): as in
// Istio, istio-remote is no builtin class and istio.io/unmanaged-gateway no
// controller of ours; the default class stays.
func TestNoRemoteClass(t *testing.T) {
	remote := config.Config{Meta: config.Meta{Name: "remote-gw-class"},
		Spec: &gatewayv1.GatewayClassSpec{ControllerName: gateway.UnmanagedControllerName}}
	for _, off := range []bool{false, true} {
		o := gateway.Options{NoRemoteClass: off}
		if got := gateway.ResolveClass(o, gateway.RemoteClassName, nil, false); (got != nil) == off {
			t.Errorf("NoRemoteClass=%v: istio-remote resolves to %v", off, got)
		}
		if got, _ := gateway.ConvertClass(o, remote); (got != nil) == off {
			t.Errorf("NoRemoteClass=%v: a class of istio.io/unmanaged-gateway is %v", off, got)
		}
		if got := gateway.ResolveClass(o, gateway.DefaultClassName, nil, false); got == nil {
			t.Errorf("NoRemoteClass=%v: no default class", off)
		}
		names := map[string]bool{}
		for _, c := range gateway.BuiltinsFor(false, !off) {
			names[c.Name] = true
		}
		if names[gateway.RemoteClassName] == off || !names[gateway.DefaultClassName] {
			t.Errorf("NoRemoteClass=%v: builtins %v", off, names)
		}
	}
}
