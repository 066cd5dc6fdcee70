package debug_test

import (
	"net/http"
	"reflect"
	"testing"

	meshconfig "istio.io/api/mesh/v1alpha1"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pilot/pkg/xds/debug"
	"github.com/meshplane/istiod/pilot/pkg/xds/xdstest"
)

type gatewayList []model.NetworkGateway

func (g gatewayList) NetworkGateways() []model.NetworkGateway { return g }

// /debug/networkz lists the gateways in Istio's shape (the Go field names
// of its NetworkGateway), by address and port; /debug/pushcontext shows
// them too, hostnames only among the unresolved ones.
func TestNetworkzListsGateways(t *testing.T) {
	env := model.NewEnvironment(model.EnvironmentOptions{
		MeshNetworks: func() *meshconfig.MeshNetworks {
			return &meshconfig.MeshNetworks{Networks: map[string]*meshconfig.Network{"vm-net": {Gateways: []*meshconfig.Network_IstioNetworkGateway{
				{Gw: &meshconfig.Network_IstioNetworkGateway_Address{Address: "192.0.2.10"}, Port: 15443}}}}}
		},
		NetworkGateways: gatewayList{
			{Network: "network2", Cluster: "cluster2", Addr: "35.0.0.1", Port: 15443, HBONEPort: 15008},
			{Network: "network2", Cluster: "cluster2", Addr: "gw.example.com", Port: 15443},
		},
	})
	s := xdstest.NewServer(t)
	s.DS.SetPushContext(model.InitContext(env, nil, nil))
	mux := http.NewServeMux()
	debug.New(debug.Options{XDS: s.DS}).Install(mux)
	gw1 := `{"Network":"network2","Cluster":"cluster2","Addr":"35.0.0.1","Port":15443,"HBONEPort":15008,"ServiceAccount":{"Namespace":"","Name":""}}`
	gw2 := `{"Network":"vm-net","Cluster":"","Addr":"192.0.2.10","Port":15443,"HBONEPort":0,"ServiceAccount":{"Namespace":"","Name":""}}`
	host := `{"Network":"network2","Cluster":"cluster2","Addr":"gw.example.com","Port":15443,"HBONEPort":0,"ServiceAccount":{"Namespace":"","Name":""}}`
	code, body := getBody(mux, "/debug/networkz")
	if want := "[" + gw2 + "," + gw1 + "]"; code != 200 || !reflect.DeepEqual(decode(t, body), decode(t, want)) {
		t.Errorf("networkz: %d %s\nwant %s", code, body, want)
	}
	_, body = getBody(mux, "/debug/pushcontext")
	got := decode(t, body).(map[string]any)
	if want := decode(t, "["+gw2+","+gw1+"]"); !reflect.DeepEqual(got["NetworkGateways"], want) {
		t.Errorf("pushcontext NetworkGateways: %v", got["NetworkGateways"])
	}
	if want := decode(t, "["+gw2+","+gw1+","+host+"]"); !reflect.DeepEqual(got["UnresolvedGateways"], want) {
		t.Errorf("pushcontext UnresolvedGateways: %v", got["UnresolvedGateways"])
	}
}
