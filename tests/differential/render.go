package differential

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"regexp"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/structpb"
)

// render turns a resource into generic JSON (protojson, numbers kept as
// json.Number), the form compared and printed. A typed config of a type
// this binary does not know (types.go links every Envoy, xDS and
// Istio extension type, so this is rare) is shown as
// {"@type": ".../google.protobuf.Struct", "unresolvedType": <url>,
// "bytes": <base64>} rather than failing the comparison.
func render(m proto.Message) (any, error) {
	m = proto.Clone(m)
	if err := resolveAnys(m.ProtoReflect()); err != nil {
		return nil, err
	}
	b, err := protojson.Marshal(m)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

const anyName = "google.protobuf.Any"

// resolveAnys walks a message, replacing Anys of unknown types (see
// render) and walking into the others, whose contents are re-marshalled
// deterministically.
func resolveAnys(m protoreflect.Message) error {
	var err error
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch {
		case fd.IsList() && fd.Message() != nil:
			l := v.List()
			for i := 0; i < l.Len() && err == nil; i++ {
				err = resolveValue(l.Get(i).Message())
			}
		case fd.IsMap() && fd.MapValue().Message() != nil:
			v.Map().Range(func(_ protoreflect.MapKey, mv protoreflect.Value) bool {
				err = resolveValue(mv.Message())
				return err == nil
			})
		case fd.Message() != nil && !fd.IsMap():
			err = resolveValue(v.Message())
		}
		return err == nil
	})
	return err
}

func resolveValue(m protoreflect.Message) error {
	if m.Descriptor().FullName() != anyName {
		return resolveAnys(m)
	}
	a, ok := m.Interface().(*anypb.Any)
	if !ok {
		return nil
	}
	if _, err := protoregistry.GlobalTypes.FindMessageByURL(a.GetTypeUrl()); err != nil {
		s, _ := structpb.NewStruct(map[string]any{
			"unresolvedType": a.GetTypeUrl(),
			"bytes":          base64.StdEncoding.EncodeToString(a.GetValue()),
		})
		b, err := proto.Marshal(s)
		if err != nil {
			return err
		}
		a.TypeUrl, a.Value = "type.googleapis.com/google.protobuf.Struct", b
		return nil
	}
	inner, err := a.UnmarshalNew()
	if err != nil {
		return fmt.Errorf("%s: %v", a.GetTypeUrl(), err)
	}
	if err := resolveAnys(inner.ProtoReflect()); err != nil {
		return err
	}
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(inner)
	if err != nil {
		return err
	}
	a.Value = b
	return nil
}

// ipv4 finds IPv4 addresses not part of a longer dotted or numeric run.
var ipv4 = regexp.MustCompile(`(^|[^0-9.])((?:[0-9]{1,3}\.){3}[0-9]{1,3})($|[^0-9])`)

// replaceIPs rewrites, in every string and object key of v, the addresses
// names maps to their names.
func replaceIPs(v any, names map[string]string) any {
	if len(names) == 0 {
		return v
	}
	switch x := v.(type) {
	case string:
		return replaceIPsIn(x, names)
	case []any:
		for i := range x {
			x[i] = replaceIPs(x[i], names)
		}
		return x
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[replaceIPsIn(k, names)] = replaceIPs(e, names)
		}
		return out
	}
	return v
}

func replaceIPsIn(s string, names map[string]string) string {
	if !ipv4.MatchString(s) {
		return s
	}
	// matches may share their delimiters: loop until nothing changes
	for {
		out := ipv4.ReplaceAllStringFunc(s, func(m string) string {
			sub := ipv4.FindStringSubmatch(m)
			if n, ok := names[sub[2]]; ok {
				return sub[1] + n + sub[3]
			}
			return m
		})
		if out == s {
			return out
		}
		s = out
	}
}
