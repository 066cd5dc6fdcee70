package envoyfilter

import (
	"fmt"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/meshplane/istiod/pkg/protoconv"
)

// mergeInto merges src into dst with the semantics of a MERGE patch, as
// Istio 1.31 implements it (a variant of proto.Merge): scalars and bytes
// set in src replace dst's; messages merge recursively, except
// google.protobuf.Duration, which src replaces whole; lists are appended
// to (MERGE_AND_REPLACE_LIST replaces a list src sets); map entries of src
// replace dst's entries of the same key.
//
// dst must be the caller's own message, but what it holds may be shared
// (a shallow copy): mergeInto never writes into a nested message, list or
// map of dst; it replaces each one it changes with a new one that shares
// the unchanged elements. Nothing of src is aliased into dst.
func mergeInto(op networking.EnvoyFilter_Patch_Operation, dst, src proto.Message) error {
	d, s := dst.ProtoReflect(), src.ProtoReflect()
	if d.Descriptor().FullName() != s.Descriptor().FullName() {
		return fmt.Errorf("cannot merge a %s into a %s", s.Descriptor().FullName(), d.Descriptor().FullName())
	}
	mergeMessage(d, s, op == networking.EnvoyFilter_Patch_MERGE_AND_REPLACE_LIST)
	return nil
}

var durationName = (&durationpb.Duration{}).ProtoReflect().Descriptor().FullName()

func mergeMessage(dst, src protoreflect.Message, replaceList bool) {
	src.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch {
		case fd.IsList():
			l := dst.NewField(fd).List()
			if !replaceList && dst.Has(fd) {
				old := dst.Get(fd).List()
				for i := 0; i < old.Len(); i++ {
					l.Append(old.Get(i))
				}
			}
			sl := v.List()
			for i := 0; i < sl.Len(); i++ {
				l.Append(copyValue(fd, sl.Get(i), l.NewElement, replaceList))
			}
			dst.Set(fd, protoreflect.ValueOfList(l))
		case fd.IsMap():
			m := dst.NewField(fd).Map()
			if dst.Has(fd) {
				dst.Get(fd).Map().Range(func(k protoreflect.MapKey, mv protoreflect.Value) bool {
					m.Set(k, mv)
					return true
				})
			}
			v.Map().Range(func(k protoreflect.MapKey, mv protoreflect.Value) bool {
				m.Set(k, copyValue(fd.MapValue(), mv, m.NewValue, replaceList))
				return true
			})
			dst.Set(fd, protoreflect.ValueOfMap(m))
		case fd.Message() != nil:
			if fd.Message().FullName() == durationName {
				dst.Set(fd, protoreflect.ValueOfMessage(proto.Clone(v.Message().Interface()).ProtoReflect()))
				return true
			}
			var child protoreflect.Message
			if dst.Has(fd) {
				child = shallowMessage(dst.Get(fd).Message())
			} else {
				child = dst.NewField(fd).Message()
			}
			mergeMessage(child, v.Message(), replaceList)
			dst.Set(fd, protoreflect.ValueOfMessage(child))
		case fd.Kind() == protoreflect.BytesKind:
			dst.Set(fd, protoreflect.ValueOfBytes(append([]byte{}, v.Bytes()...)))
		default:
			dst.Set(fd, v)
		}
		return true
	})
	if u := src.GetUnknown(); len(u) > 0 {
		dst.SetUnknown(append(append(protoreflect.RawFields{}, dst.GetUnknown()...), u...))
	}
}

// copyValue copies one list element or map value of src (a new message
// merged from it, or fresh bytes).
func copyValue(fd protoreflect.FieldDescriptor, v protoreflect.Value, newValue func() protoreflect.Value, replaceList bool) protoreflect.Value {
	switch {
	case fd.Message() != nil:
		nv := newValue()
		mergeMessage(nv.Message(), v.Message(), replaceList)
		return nv
	case fd.Kind() == protoreflect.BytesKind:
		return protoreflect.ValueOfBytes(append([]byte{}, v.Bytes()...))
	}
	return v
}

// mergeTyped merges the decoded src (a patch's typed_config) into the
// content of dst, as Istio's Any merge does: both decode to their types,
// src merges into dst with MERGE semantics, and the result is packed
// again. The merged message is returned for validation.
func mergeTyped(dst *anypb.Any, src proto.Message) (*anypb.Any, proto.Message, error) {
	d, err := dst.UnmarshalNew()
	if err != nil {
		return nil, nil, fmt.Errorf("typed_config %s: %v", dst.GetTypeUrl(), err)
	}
	if err := mergeInto(networking.EnvoyFilter_Patch_MERGE, d, src); err != nil {
		return nil, nil, fmt.Errorf("%w: %v", errMismatch, err)
	}
	return protoconv.MessageToAny(d), d, nil
}

// shallow returns a new message whose fields are m's: nested messages and
// lists are shared with m, so the copy's lists must be replaced, never
// modified in place.
func shallow[T proto.Message](m T) T { return shallowMessage(m.ProtoReflect()).Interface().(T) }

func shallowMessage(src protoreflect.Message) protoreflect.Message {
	dst := src.New()
	src.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		dst.Set(fd, v)
		return true
	})
	if u := src.GetUnknown(); len(u) > 0 {
		dst.SetUnknown(u)
	}
	return dst
}

// anyMessage is a typed_config.
type anyMessage = *anypb.Any

// validatedMessage is an Envoy message with its generated validation.
type validatedMessage interface {
	proto.Message
	ValidateAll() error
}
