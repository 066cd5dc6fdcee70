package protoconv_test

import (
	"bytes"
	"testing"

	"google.golang.org/protobuf/types/known/structpb"

	"github.com/meshplane/istiod/pkg/protoconv"
)

// A message with a map packs to the same bytes every time (Go randomises
// map order, so a non-deterministic marshal differs within a few tries).
func TestMessageToAnyIsDeterministic(t *testing.T) {
	fields := map[string]any{}
	for _, k := range []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j"} {
		fields[k] = k
	}
	st, err := structpb.NewStruct(fields)
	if err != nil {
		t.Fatal(err)
	}
	first := protoconv.MessageToAny(st).Value
	for i := 0; i < 50; i++ {
		if got := protoconv.MessageToAny(st).Value; !bytes.Equal(got, first) {
			t.Fatalf("try %d packed differently", i)
		}
	}
}
