package endpoint_test

import (
	"fmt"
	"testing"

	"google.golang.org/protobuf/types/known/wrapperspb"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pilot/pkg/networking/endpoint"
)

func spread() []*model.IstioEndpoint {
	var eps []*model.IstioEndpoint
	for i, l := range []string{"us-east/a/1", "us-east/a/2", "us-east/b/1", "us-west/a/1", "eu/a/1"} {
		eps = append(eps, &model.IstioEndpoint{Addresses: []string{"10.0.0." + string(rune('1'+i))}, EndpointPort: 80, ServicePortName: "http",
			HealthStatus: model.Healthy, Locality: model.Locality{Label: l}})
	}
	return eps
}

func TestLocalityFailoverPriorities(t *testing.T) {
	la := endpoint.Build("c", spread(), endpoint.Options{PortName: "http"})
	endpoint.ApplyLocalityLB(la, endpoint.ParseLocality("us-east/a/1"), &networking.LocalityLoadBalancerSetting{
		Failover: []*networking.LocalityLoadBalancerSetting_Failover{{From: "us-east", To: "eu"}},
	}, true)
	want := map[string]uint32{"us-east/a/1": 0, "us-east/a/2": 1, "us-east/b/1": 2, "eu/a/1": 3, "us-west/a/1": 4}
	for _, lle := range la.Endpoints {
		l := lle.Locality.Region + "/" + lle.Locality.Zone + "/" + lle.Locality.SubZone
		if lle.Priority != want[l] {
			t.Errorf("%s: priority %d, want %d", l, lle.Priority, want[l])
		}
	}
	if err := la.ValidateAll(); err != nil {
		t.Fatal(err)
	}
	// without outlier detection there is no failover
	plain := endpoint.Build("c", spread(), endpoint.Options{PortName: "http"})
	endpoint.ApplyLocalityLB(plain, endpoint.ParseLocality("us-east/a/1"), &networking.LocalityLoadBalancerSetting{}, false)
	for _, lle := range plain.Endpoints {
		if lle.Priority != 0 {
			t.Errorf("priority without failover: %v", lle)
		}
	}
	// disabled setting leaves the assignment alone
	off := endpoint.Build("c", spread(), endpoint.Options{PortName: "http"})
	endpoint.ApplyLocalityLB(off, endpoint.ParseLocality("us-east/a/1"), &networking.LocalityLoadBalancerSetting{Enabled: wrapperspb.Bool(false)}, true)
	for _, lle := range off.Endpoints {
		if lle.Priority != 0 {
			t.Errorf("disabled setting changed priorities")
		}
	}
}

// Failover priorities are set in place: the localities keep the
// builder's order (by locality label), as Istio's applyLocalityFailover
// leaves them, also when the proxy's own sorts after others.
func TestLocalityFailoverKeepsOrder(t *testing.T) {
	la := endpoint.Build("c", spread(), endpoint.Options{PortName: "http"})
	endpoint.ApplyLocalityLB(la, endpoint.ParseLocality("us-west/a/1"), &networking.LocalityLoadBalancerSetting{}, true)
	var got []string
	for _, lle := range la.Endpoints {
		got = append(got, fmt.Sprintf("%s/%s/%s=%d", lle.Locality.Region, lle.Locality.Zone, lle.Locality.SubZone, lle.Priority))
	}
	want := "[eu/a/1=1 us-east/a/1=1 us-east/a/2=1 us-east/b/1=1 us-west/a/1=0]"
	if fmt.Sprint(got) != want {
		t.Errorf("localities %v, want %s", got, want)
	}
}

func TestLocalityDistribute(t *testing.T) {
	la := endpoint.Build("c", spread(), endpoint.Options{PortName: "http"})
	endpoint.ApplyLocalityLB(la, endpoint.ParseLocality("us-east/a/1"), &networking.LocalityLoadBalancerSetting{
		Distribute: []*networking.LocalityLoadBalancerSetting_Distribute{
			{From: "eu/*", To: map[string]uint32{"eu/*": 100}},
			{From: "us-east/a/*", To: map[string]uint32{"us-east/a/*": 80, "us-west/*": 20}},
		},
	}, true)
	got := map[string]uint32{}
	for _, lle := range la.Endpoints {
		got[lle.Locality.Region+"/"+lle.Locality.Zone+"/"+lle.Locality.SubZone] = lle.LoadBalancingWeight.Value
	}
	want := map[string]uint32{"us-east/a/1": 80, "us-east/a/2": 80, "us-west/a/1": 20}
	if len(got) != len(want) {
		t.Fatalf("weights %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: weight %d, want %d", k, got[k], v)
		}
	}
}
