package xds_test

import (
	"strings"
	"testing"
	"time"

	cluster "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	endpoint "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listener "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	route "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pilot/pkg/xds"
	"github.com/meshplane/istiod/pilot/pkg/xds/adsc"
	"github.com/meshplane/istiod/pilot/pkg/xds/xdstest"
	"github.com/meshplane/istiod/pkg/monitoring"
	"github.com/meshplane/istiod/pkg/version"
)

// fixedGen serves one resource of its type, whatever is asked.
func fixedGen(name string, m proto.Message) xds.Generator {
	return xds.GeneratorFunc(func(*model.Proxy, *xds.WatchedResource, *model.PushRequest) (xds.Generated, error) {
		return xds.Generated{Resources: []*discovery.Resource{res(name, m)}}, nil
	})
}

// fourTypeServer serves one cluster, endpoint, listener and route.
func fourTypeServer(t *testing.T) *xdstest.Server {
	t.Helper()
	s := xdstest.NewServer(t)
	s.DS.RegisterGenerator(xds.ClusterType, fixedGen("c", &cluster.Cluster{Name: "c"}))
	s.DS.RegisterGenerator(xds.EndpointType, fixedGen("c", &endpoint.ClusterLoadAssignment{ClusterName: "c"}))
	s.DS.RegisterGenerator(xds.ListenerType, fixedGen("l", &listener.Listener{Name: "l"}))
	s.DS.RegisterGenerator(xds.RouteType, fixedGen("r", &route.RouteConfiguration{Name: "r"}))
	s.DS.SetPushContext(model.NewPushContext())
	return s
}

// A NACK of CDS, EDS, LDS or RDS, over either protocol, sets Istio's
// pilot_xds_<type>_reject{node=<proxy ID>, err=<gRPC code name>} to 1 and
// counts pilot_total_xds_rejects{type}.
func TestNACKSetsRejectGauges(t *testing.T) {
	s := fourTypeServer(t)
	for _, tc := range []struct {
		typeURL, short string
		names          []string
	}{
		{xds.ClusterType, "cds", nil},
		{xds.EndpointType, "eds", []string{"c"}},
		{xds.ListenerType, "lds", nil},
		{xds.RouteType, "rds", []string{"r"}},
	} {
		for _, delta := range []bool{false, true} {
			pod := "nack-" + tc.short + map[bool]string{false: "-sotw", true: "-delta"}[delta]
			t.Run(pod, func(t *testing.T) {
				before := metricValue(t, "pilot_total_xds_rejects", map[string]string{"type": tc.short})
				c := xdstest.Dial(t, s, adsc.Config{NodeID: "sidecar~10.0.0.1~" + pod + ".default~default.svc.cluster.local",
					Delta: delta, NoAutoACK: true})
				if err := c.Watch(tc.typeURL, tc.names...); err != nil {
					t.Fatal(err)
				}
				if err := c.NACK(xdstest.Next(t, c), "rejected by the test"); err != nil { // code 3
					t.Fatal(err)
				}
				gauge := "pilot_xds_" + tc.short + "_reject"
				labels := map[string]string{"node": pod + ".default", "err": "InvalidArgument"}
				waitUntil(t, gauge+" set", func() bool { return metricValue(t, gauge, labels) == 1 })
				if d := metricValue(t, "pilot_total_xds_rejects", map[string]string{"type": tc.short}) - before; d != 1 {
					t.Errorf("pilot_total_xds_rejects{type=%s} grew by %v, want 1", tc.short, d)
				}
				if delta {
					return
				}
				// a second NACK leaves the gauge at 1 (Istio records 1, it
				// does not add); a SotW request without a nonce is answered
				if err := c.Watch(tc.typeURL, tc.names...); err != nil {
					t.Fatal(err)
				}
				if err := c.NACK(xdstest.Next(t, c), "again"); err != nil {
					t.Fatal(err)
				}
				waitUntil(t, "the second rejection counted", func() bool {
					return metricValue(t, "pilot_total_xds_rejects", map[string]string{"type": tc.short})-before == 2
				})
				if v := metricValue(t, gauge, labels); v != 1 {
					t.Errorf("%s%v = %v after two rejections, want 1", gauge, labels, v)
				}
			})
		}
	}
}

// A stream that ends on a receive error other than a normal disconnect
// counts in pilot_total_xds_internal_errors; a client going away does not.
func TestRecvErrorCountsAsInternalError(t *testing.T) {
	s := fourTypeServer(t)
	before := metricValue(t, "pilot_total_xds_internal_errors", nil)

	// a request over gRPC's 4 MiB receive limit
	c := xdstest.Dial(t, s, adsc.Config{})
	huge := &discovery.DiscoveryRequest{TypeUrl: xds.ClusterType, ResourceNames: []string{strings.Repeat("x", 5<<20)}}
	if err := c.SendSotW(huge); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Next(xdstest.Timeout); status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("stream error %v, want ResourceExhausted", err)
	}
	// the error reaches the client after the server counted it
	if d := metricValue(t, "pilot_total_xds_internal_errors", nil) - before; d != 1 {
		t.Fatalf("pilot_total_xds_internal_errors grew by %v, want 1", d)
	}

	// clients that go away, over either protocol
	for _, delta := range []bool{false, true} {
		c := xdstest.Dial(t, s, adsc.Config{Delta: delta})
		if err := c.Watch(xds.ClusterType); err != nil {
			t.Fatal(err)
		}
		xdstest.Next(t, c)
		c.Close()
	}
	waitUntil(t, "the connections to end", func() bool { return len(s.DS.Connections()) == 0 })
	if d := metricValue(t, "pilot_total_xds_internal_errors", nil) - before; d != 1 {
		t.Errorf("pilot_total_xds_internal_errors grew by %v after clients disconnected, want 1 (the oversize request only)", d)
	}
}

// metricValue is the value of the series of name whose labels include
// labels (0 when there is none), from the process registry.
func metricValue(t *testing.T, name string, labels map[string]string) float64 {
	t.Helper()
	fams, err := monitoring.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			if hasLabels(m, labels) {
				switch f.GetType() {
				case dto.MetricType_COUNTER:
					return m.GetCounter().GetValue()
				case dto.MetricType_GAUGE:
					return m.GetGauge().GetValue()
				default:
					t.Fatalf("%s is a %v", name, f.GetType())
				}
			}
		}
	}
	return 0
}

func hasLabels(m *dto.Metric, want map[string]string) bool {
	got := map[string]string{}
	for _, l := range m.GetLabel() {
		got[l.GetName()] = l.GetValue()
	}
	for k, v := range want {
		if got[k] != v {
			return false
		}
	}
	return true
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// The discovery server reports itself as Istio's pilot component.
func TestBuildInfoIsPilot(t *testing.T) {
	if v := metricValue(t, "istio_build", map[string]string{"component": "pilot", "tag": version.Version}); v != 1 {
		t.Errorf("istio_build{component=pilot,tag=%s} = %v, want 1", version.Version, v)
	}
}
