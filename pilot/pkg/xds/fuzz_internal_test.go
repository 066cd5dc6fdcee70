package xds

import (
	"encoding/json"
	"testing"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	statuspb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/meshplane/istiod/pilot/pkg/model"
)

type discardSotW struct{}

func (discardSotW) Send(*discovery.DiscoveryResponse) error { return nil }

type discardDelta struct{}

func (discardDelta) Send(*discovery.DeltaDiscoveryResponse) error { return nil }

// fuzzRequest is what a fuzzed request may vary.
type fuzzRequest struct {
	Type        int      `json:"t"`
	Names       []string `json:"n"`
	Unsubscribe []string `json:"u"`
	Nonce       string   `json:"o"`
	UseLast     bool     `json:"l"`
	NACK        string   `json:"k"`
	Versions    map[string]string
}

var fuzzTypes = []string{ClusterType, EndpointType, ListenerType, RouteType, SecretType, "", "istio.io/debug/syncz", "bogus"}

// FuzzADSRequests feeds arbitrary node IDs, node metadata and sequences of
// state-of-the-world and delta requests (subscriptions, nonces, NACKs,
// initial versions) to the request handling of one connection. Whatever
// they say, nothing panics and the connection's state stays readable.
func FuzzADSRequests(f *testing.F) {
	f.Add("sidecar~10.0.0.1~a.ns~ns.svc.cluster.local", `{"NAMESPACE":"ns","LABELS":{"app":"a"}}`,
		`[{"t":0},{"t":1,"n":["outbound|80||a.ns.svc.cluster.local"]},{"t":1,"l":true},{"t":2,"k":"bad"},{"t":1,"u":["x","*"]}]`, true)
	f.Add("router~::1~gw.istio-system~istio-system.svc.cluster.local", `{"GENERATOR":"grpc","INSTANCE_IPS":"1.2.3.4,,x"}`,
		`[{"t":3,"n":["8080","*"],"o":"stale"},{"t":6},{"t":7,"n":[""]}]`, false)
	f.Add("~~~", `{"LABELS":"not a map","ISTIO_VERSION":5}`, `[{"t":5,"n":[]}]`, true)
	f.Fuzz(func(t *testing.T, nodeID, metadata, requests string, delta bool) {
		var md map[string]any
		_ = json.Unmarshal([]byte(metadata), &md)
		mds, err := structpb.NewStruct(md)
		if err != nil {
			mds = nil
		}
		node := &core.Node{Id: nodeID, Metadata: mds}
		var reqs []fuzzRequest
		if json.Unmarshal([]byte(requests), &reqs) != nil || len(reqs) > 64 {
			return
		}
		s := NewDiscoveryServer()
		s.SetPushContext(model.NewPushContext())
		gen := GeneratorFunc(func(_ *model.Proxy, w *WatchedResource, _ *model.PushRequest) (Generated, error) {
			var g Generated
			for i, n := range w.Names() {
				if i%2 == 0 {
					a, _ := anypb.New(&structpb.Value{})
					g.Resources = append(g.Resources, &discovery.Resource{Name: n, Resource: a})
				} else {
					g.Held = append(g.Held, Held{Name: n, Reason: "fuzz"})
				}
			}
			return g, nil
		})
		for _, typ := range fuzzTypes[:5] {
			s.RegisterGenerator(typ, gen)
		}
		con, err := s.initConnection(t.Context(), node, delta, nil)
		if err != nil {
			return // refused nodes are fine; panics are not
		}
		last := ""
		for _, r := range reqs {
			typ := fuzzTypes[((r.Type%len(fuzzTypes))+len(fuzzTypes))%len(fuzzTypes)]
			nonce := r.Nonce
			if r.UseLast {
				nonce = last
			}
			var detail *statuspb.Status
			if r.NACK != "" {
				detail = &statuspb.Status{Message: r.NACK}
			}
			if delta {
				_ = s.processDeltaRequest(con, discardDelta{}, &discovery.DeltaDiscoveryRequest{TypeUrl: typ, ResponseNonce: nonce,
					ResourceNamesSubscribe: r.Names, ResourceNamesUnsubscribe: r.Unsubscribe, InitialResourceVersions: r.Versions, ErrorDetail: detail})
			} else {
				_ = s.processRequest(con, discardSotW{}, &discovery.DiscoveryRequest{TypeUrl: typ, ResponseNonce: nonce, ResourceNames: r.Names, ErrorDetail: detail})
			}
			if w := con.Watched(typ); w != nil {
				last = w.NonceSent
			}
			_ = s.Problems()
			_ = con.Snapshot()
		}
		if delta {
			_ = s.pushAllDelta(con, discardDelta{}, &model.PushRequest{Full: true})
		} else {
			_ = s.pushAll(con, discardSotW{}, &model.PushRequest{Full: true})
		}
	})
}
