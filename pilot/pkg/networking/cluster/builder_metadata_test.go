package cluster_test

import (
	"testing"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	"google.golang.org/protobuf/proto"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pilot/pkg/networking/cluster"
	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/config/mesh"
	"github.com/meshplane/istiod/pkg/config/protocol"
)

// istioServices returns the "services" list of a cluster's istio metadata,
// failing when the metadata is missing or empty.
func istioServices(t *testing.T, c *clusterv3.Cluster) []map[string]string {
	t.Helper()
	st := c.GetMetadata().GetFilterMetadata()["istio"]
	if st == nil || st.GetFields()["services"] == nil {
		t.Fatalf("cluster %s: istio metadata without services: %v", c.GetName(), c.GetMetadata())
	}
	var out []map[string]string
	for _, v := range st.GetFields()["services"].GetListValue().GetValues() {
		e := map[string]string{}
		for k, f := range v.GetStructValue().GetFields() {
			e[k] = f.GetStringValue()
		}
		out = append(out, e)
	}
	return out
}

// A name with bytes that are not UTF-8 (structpb.NewStruct rejects them)
// still yields the metadata naming the service, and the metadata marshals.
func TestServiceMetadataSurvivesInvalidUTF8(t *testing.T) {
	bad := "re\xffviews"
	svc := service(bad, "bookinfo", 9080, protocol.HTTP, model.ClientSideLB)
	svc.MeshExternal = true
	dr := &config.Config{Meta: config.Meta{GroupVersionKind: config.GroupVersionKind{Group: "networking.istio.io", Version: "v1", Kind: "DestinationRule"},
		Name: "d\xfer", Namespace: "bookinfo"}}
	m := mesh.DefaultMeshConfig()

	outbound := cluster.BuildOutbound(svc, cluster.Options{Mesh: m, DestinationRule: dr})
	local := *svc // an inbound cluster's services are the proxy's own, never external
	local.MeshExternal = false
	inbound := cluster.BuildInbound(9080, protocol.HTTP, []*model.Service{&local}, m)
	for _, c := range append(outbound, inbound) {
		got := istioServices(t, c)
		if len(got) != 1 || got[0]["name"] != "re\uFFFDviews" || got[0]["namespace"] != "bookinfo" ||
			got[0]["host"] != "re\uFFFDviews.bookinfo.svc.cluster.local" {
			t.Errorf("cluster %s: services metadata %v", c.GetName(), got)
		}
		if _, err := proto.Marshal(c.GetMetadata()); err != nil {
			t.Errorf("cluster %s: metadata does not marshal: %v", c.GetName(), err)
		}
	}
	fields := outbound[0].GetMetadata().GetFilterMetadata()["istio"].GetFields()
	if got := fields["config"].GetStringValue(); got != "/apis/networking.istio.io/v1/namespaces/bookinfo/destination-rule/d\uFFFDr" {
		t.Errorf("config metadata %q", got)
	}
	if !fields["external"].GetBoolValue() {
		t.Errorf("external metadata missing: %v", fields)
	}
}
