package protoconv

import (
	"sync"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
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
