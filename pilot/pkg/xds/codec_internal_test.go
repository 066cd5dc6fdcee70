package xds

import (
	"bytes"
	"fmt"
	"math/rand"
	"sort"
	"testing"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc/encoding"
	protocodec "google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"
)

func testCodec() responseCodec {
	return responseCodec{base: encoding.GetCodecV2(protocodec.Name), enc: testEncodings}
}

func randomAny(r *rand.Rand) *anypb.Any {
	a := &anypb.Any{}
	if r.Intn(5) > 0 {
		a.TypeUrl = ClusterType
	}
	switch r.Intn(4) {
	case 0: // empty value
	case 1:
		a.Value = make([]byte, 1+r.Intn(inlineBelow-1))
	case 2:
		a.Value = make([]byte, inlineBelow)
	default:
		a.Value = make([]byte, inlineBelow+r.Intn(200000))
	}
	r.Read(a.Value)
	return a
}

// testEncodings are the encodings the test codec reads.
var testEncodings = &Encodings{}

func randomResource(r *rand.Rand) *discovery.Resource {
	if r.Intn(4) == 0 { // as the generators make them
		a := randomAny(r)
		return testEncodings.NewResource(a.TypeUrl, fmt.Sprintf("outbound|80||svc-%d.example", r.Intn(1000)), a.Value)
	}
	res := &discovery.Resource{}
	if r.Intn(4) > 0 {
		res.Name = fmt.Sprintf("outbound|%d||svc-%d.example", r.Intn(65536), r.Intn(1000))
	}
	if r.Intn(4) > 0 {
		res.Version = ContentVersion([]byte(res.Name))
	}
	if r.Intn(6) > 0 {
		res.Resource = randomAny(r)
	}
	if r.Intn(8) == 0 {
		res.Aliases = []string{"a", "b"}
	}
	if r.Intn(8) == 0 {
		res.Ttl = durationpb.New(3e9)
	}
	if r.Intn(8) == 0 {
		res.CacheControl = &discovery.Resource_CacheControl{DoNotCache: true}
	}
	if r.Intn(8) == 0 {
		res.ResourceName = &discovery.ResourceName{Name: res.Name}
	}
	if r.Intn(8) == 0 {
		res.Metadata = &core.Metadata{FilterMetadata: map[string]*structpb.Struct{"k": {}}}
	}
	return res
}

func materialize(t *testing.T, b mem.BufferSlice) []byte {
	t.Helper()
	defer b.Free()
	return b.Materialize()
}

// The spliced encoding is the standard codec's, byte for byte, for every
// shape of response, and it references large values instead of copying
// them.
func TestResponseCodecMatchesProto(t *testing.T) {
	c := testCodec()
	r := rand.New(rand.NewSource(1))
	cp := &core.ControlPlane{Identifier: `{"Component":"istiod","ID":"istiod-1"}`}
	for i := 0; i < 300; i++ {
		sotw := &discovery.DiscoveryResponse{TypeUrl: ClusterType, Nonce: nonce(), Canary: r.Intn(4) == 0}
		delta := &discovery.DeltaDiscoveryResponse{TypeUrl: ClusterType, Nonce: nonce()}
		if r.Intn(3) > 0 {
			sotw.VersionInfo, delta.SystemVersionInfo = "2026-12-01T12:00:00Z/7", "2026-12-01T12:00:00Z/7"
		}
		if r.Intn(3) > 0 {
			sotw.ControlPlane, delta.ControlPlane = cp, cp
		}
		for n := r.Intn(20); n > 0; n-- {
			sotw.Resources = append(sotw.Resources, randomAny(r))
			delta.Resources = append(delta.Resources, randomResource(r))
		}
		if r.Intn(2) == 0 {
			delta.RemovedResources = []string{"gone-1", "gone-2"}
		}
		if r.Intn(6) == 0 {
			delta.RemovedResourceNames = []*discovery.ResourceName{{Name: "gone-1"}}
		}
		for _, m := range []proto.Message{sotw, delta} {
			want, err := proto.Marshal(m)
			if err != nil {
				t.Fatal(err)
			}
			got, err := c.Marshal(m)
			if err != nil {
				t.Fatal(err)
			}
			if b := materialize(t, got); !bytes.Equal(b, want) {
				t.Fatalf("case %d %T: spliced encoding differs from proto.Marshal (%d vs %d bytes)", i, m, len(b), len(want))
			}
		}
	}
}

// A large value is sent from the cached bytes themselves; unknown fields
// (which the standard codec puts last) go the standard way.
func TestResponseCodecSharesValues(t *testing.T) {
	c := testCodec()
	big := &anypb.Any{TypeUrl: ClusterType, Value: bytes.Repeat([]byte{7}, 4096)}
	largest := func(m proto.Message) []byte {
		t.Helper()
		got, err := c.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		var out []byte
		for _, b := range got {
			if d := b.ReadOnlyData(); len(d) > len(out) {
				out = d
			}
		}
		return out
	}
	// state of the world: the Any's value itself
	if d := largest(&discovery.DiscoveryResponse{TypeUrl: ClusterType, Resources: []*anypb.Any{big}}); len(d) != len(big.Value) || &d[0] != &big.Value[0] {
		t.Error("the large value was copied into the response")
	}
	// delta: the value itself too
	if d := largest(&discovery.DeltaDiscoveryResponse{TypeUrl: ClusterType, Resources: []*discovery.Resource{{Name: "c", Version: "1", Resource: big}}}); len(d) != len(big.Value) || &d[0] != &big.Value[0] {
		t.Error("the large value was copied into the delta response")
	}
	// a resource of NewResource: the encoding it was built in, whose value
	// is its own, sent whole by every response
	res := testEncodings.NewResource(ClusterType, "c", big.Value)
	if !bytes.Equal(res.Resource.Value, big.Value) || res.Version != ContentVersion(big.Value) || res.Name != "c" {
		t.Fatalf("NewResource made %v", res)
	}
	first := largest(&discovery.DeltaDiscoveryResponse{TypeUrl: ClusterType, Nonce: "a", Resources: []*discovery.Resource{res}})
	second := largest(&discovery.DeltaDiscoveryResponse{TypeUrl: ClusterType, Nonce: "b", Resources: []*discovery.Resource{res}})
	if len(first) <= len(big.Value) || &first[0] != &second[0] {
		t.Error("each response encoded the resource anew")
	}
	if v := res.Resource.Value; &first[len(first)-len(v)-len("c")-2] != &v[0] {
		t.Error("the resource's value is not held in its encoding")
	}

	odd := &discovery.DiscoveryResponse{TypeUrl: ClusterType, Resources: []*anypb.Any{big}}
	odd.ProtoReflect().SetUnknown(protowire.AppendVarint(protowire.AppendTag(nil, 99, protowire.VarintType), 1))
	want, _ := proto.Marshal(odd)
	got, err := c.Marshal(odd)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(materialize(t, got), want) {
		t.Fatal("a response with unknown fields is not encoded as proto.Marshal does")
	}

	// any other message goes to the standard codec
	req := &discovery.DiscoveryRequest{TypeUrl: ClusterType, ResourceNames: []string{"a"}}
	want, _ = proto.Marshal(req)
	got, err = c.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(materialize(t, got), want) {
		t.Fatal("a request is not encoded as proto.Marshal does")
	}
}

func fieldNumbers(m proto.Message) []int {
	fs := m.ProtoReflect().Descriptor().Fields()
	out := make([]int, 0, fs.Len())
	for i := 0; i < fs.Len(); i++ {
		out = append(out, int(fs.Get(i).Number()))
	}
	sort.Ints(out)
	return out
}

// The codec encodes some fields itself: it must know every field of the
// types it handles (an upgrade of the Envoy API that adds one fails here).
func TestResourceFieldsKnown(t *testing.T) {
	for _, c := range []struct {
		m    proto.Message
		want string
	}{
		// plainResource checks every field above 2 but name (3)
		{&discovery.Resource{}, "[1 2 3 4 6 7 8 9]"},
		{&anypb.Any{}, "[1 2]"},
	} {
		if got := fmt.Sprint(fieldNumbers(c.m)); got != c.want {
			t.Errorf("%T has fields %s, the codec knows %s", c.m, got, c.want)
		}
	}
	for _, c := range []struct {
		m          proto.Message
		one, two   protoreflect.Name
		twoMessage protoreflect.FullName
	}{
		{&discovery.DiscoveryResponse{}, "version_info", "resources", "google.protobuf.Any"},
		{&discovery.DeltaDiscoveryResponse{}, "system_version_info", "resources", "envoy.service.discovery.v3.Resource"},
		{&discovery.Resource{}, "version", "resource", "google.protobuf.Any"},
	} {
		fs := c.m.ProtoReflect().Descriptor().Fields()
		if f := fs.ByNumber(1); f == nil || f.Name() != c.one || f.Kind() != protoreflect.StringKind {
			t.Errorf("%T field 1 is not the string %s", c.m, c.one)
		}
		if f := fs.ByNumber(2); f == nil || f.Name() != c.two || f.Message() == nil || f.Message().FullName() != c.twoMessage {
			t.Errorf("%T field 2 is not %s of %s", c.m, c.two, c.twoMessage)
		}
	}
}
