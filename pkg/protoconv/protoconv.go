package protoconv

import (
	"sync"

	udpa "github.com/cncf/xds/go/udpa/type/v1"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/structpb"
)

var deterministic = proto.MarshalOptions{Deterministic: true}

// MessageToAny packs m. It panics if m cannot be marshalled, which only a
// message with invalid UTF-8 in a string field can cause: config builders
// copy strings from validated input.
func MessageToAny(m proto.Message) *anypb.Any {
	a := &anypb.Any{}
	if err := anypb.MarshalFrom(a, m, deterministic); err != nil {
		panic(err)
	}
	return a
}

// Constant packs the message build returns once, on first use, and returns
// that same Any ever after: for configs that never vary. The Any is shared,
// so callers must not modify it (marshalling it concurrently is safe).
func Constant(build func() proto.Message) func() *anypb.Any {
	return sync.OnceValue(func() *anypb.Any { return MessageToAny(build()) })
}

// TypedStruct is the constant config of an extension the Envoy protos do
// not define (Istio's own filters), the way Istio sends it: a TypedStruct
// carrying the config's type URL and its fields as JSON. fields must be
// constants structpb can hold.
func TypedStruct(typeURL string, fields map[string]any) func() *anypb.Any {
	return Constant(func() proto.Message {
		v, err := structpb.NewStruct(fields)
		if err != nil {
			panic(err) // fields are the caller's constants
		}
		return &udpa.TypedStruct{TypeUrl: typeURL, Value: v}
	})
}
