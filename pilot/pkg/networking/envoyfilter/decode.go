package envoyfilter

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	bootstrap "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	hcm "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"github.com/golang/protobuf/jsonpb"            //nolint:staticcheck // the decoder Istio decodes patch values with
	legacyproto "github.com/golang/protobuf/proto" //nolint:staticcheck // its message type
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/structpb"
	networking "istio.io/api/networking/v1alpha3"
)

// newValue returns an empty message of the Envoy type a patch of applyTo
// holds, nil for an applyTo that names none.
func newValue(applyTo networking.EnvoyFilter_ApplyTo) proto.Message {
	switch applyTo {
	case networking.EnvoyFilter_CLUSTER:
		return &clusterv3.Cluster{}
	case networking.EnvoyFilter_LISTENER:
		return &listenerv3.Listener{}
	case networking.EnvoyFilter_ROUTE_CONFIGURATION:
		return &routev3.RouteConfiguration{}
	case networking.EnvoyFilter_FILTER_CHAIN:
		return &listenerv3.FilterChain{}
	case networking.EnvoyFilter_HTTP_FILTER:
		return &hcm.HttpFilter{}
	case networking.EnvoyFilter_NETWORK_FILTER:
		return &listenerv3.Filter{}
	case networking.EnvoyFilter_VIRTUAL_HOST:
		return &routev3.VirtualHost{}
	case networking.EnvoyFilter_HTTP_ROUTE:
		return &routev3.Route{}
	case networking.EnvoyFilter_EXTENSION_CONFIG:
		return &core.TypedExtensionConfig{}
	case networking.EnvoyFilter_BOOTSTRAP:
		return &bootstrap.Bootstrap{}
	case networking.EnvoyFilter_LISTENER_FILTER:
		return &listenerv3.ListenerFilter{}
	}
	return nil
}

// decodeValue decodes a patch value as Istio does: the Struct is written as
// JSON with the proto field names and read into the Envoy type of applyTo
// by the legacy jsonpb decoder, unknown fields allowed (err is what Istio's
// validation rejects). strictErr is what a strict decode finds beyond that
// (unknown fields), which Istio's validation warns about. A nil value (for
// REMOVE) decodes as nil.
func decodeValue(applyTo networking.EnvoyFilter_ApplyTo, value *structpb.Struct) (msg proto.Message, strictErr, err error) {
	if value == nil {
		return nil, nil, nil
	}
	obj := newValue(applyTo)
	if obj == nil {
		return nil, nil, fmt.Errorf("Envoy filter: unknown object type for applyTo %s", applyTo) //nolint:staticcheck // Istio's text
	}
	var buf bytes.Buffer
	if err := (&jsonpb.Marshaler{OrigName: true}).Marshal(&buf, legacyproto.MessageV1(value)); err != nil {
		return nil, nil, fmt.Errorf("Envoy filter: %v", err) //nolint:staticcheck // Istio's text
	}
	js := buf.Bytes()
	if err := (&jsonpb.Unmarshaler{AllowUnknownFields: true}).Unmarshal(bytes.NewReader(js), legacyproto.MessageV1(obj)); err != nil {
		msg := err.Error()
		if strings.Contains(msg, "could not resolve Any message type") || strings.Contains(msg, "unable to resolve") {
			hint := ""
			if strings.Contains(msg, ".v2.") {
				hint = " (hint: try using the v3 XDS API)"
			}
			return nil, nil, fmt.Errorf("Envoy filter: referenced type unknown%s: %v", hint, err) //nolint:staticcheck // Istio's text
		}
		return nil, nil, fmt.Errorf("Envoy filter: %v", err) //nolint:staticcheck // Istio's text
	}
	strict := newValue(applyTo)
	if err := (&jsonpb.Unmarshaler{}).Unmarshal(bytes.NewReader(js), legacyproto.MessageV1(strict)); err != nil {
		strictErr = err
	}
	return obj, strictErr, nil
}

// prepare checks the value once, where its validity does not depend on the
// resource patched, and decodes the typed_config a MERGE merges.
//
// A value that is inserted, added or replaces something is a complete
// message: it must pass its type's validation, with every Any inside it.
// A MERGE value is partial; only the Any values inside it are checked
// (they replace, or are appended, whole), except the typed_config that is
// merged into the target's, whose own Any values are checked.
func (p *patch) prepare() error {
	if p.value == nil {
		if p.op != networking.EnvoyFilter_Patch_REMOVE {
			return errors.New("Envoy filter: missing patch value for non-remove operation") //nolint:staticcheck // Istio's text
		}
		return nil
	}
	if !isMerge(p.op) {
		if err := validateDeep(p.value); err != nil {
			return fmt.Errorf("the patch value is not a valid %s: %v", p.value.ProtoReflect().Descriptor().FullName(), err)
		}
		return nil
	}
	mergedAny := p.mergedAny()
	if mergedAny != nil {
		m, err := mergedAny.UnmarshalNew()
		if err != nil {
			return fmt.Errorf("Envoy filter: typed_config %s: %v", mergedAny.GetTypeUrl(), err) //nolint:staticcheck // Istio's text
		}
		p.merged = m
		if err := walkAnys(m.ProtoReflect(), nil, validateAny); err != nil {
			return fmt.Errorf("the patch value is not valid: %v", err)
		}
	}
	if err := walkAnys(p.value.ProtoReflect(), mergedAny, validateAny); err != nil {
		return fmt.Errorf("the patch value is not valid: %v", err)
	}
	return nil
}

// mergedAny is the Any of a MERGE value that is merged into the target's
// own Any rather than replacing it: a filter's typed_config, a transport
// socket's.
func (p *patch) mergedAny() *anypb.Any {
	switch v := p.value.(type) {
	case *hcm.HttpFilter:
		return v.GetTypedConfig()
	case *listenerv3.Filter:
		return v.GetTypedConfig()
	case *listenerv3.ListenerFilter:
		return v.GetTypedConfig()
	case *clusterv3.Cluster:
		return v.GetTransportSocket().GetTypedConfig()
	case *listenerv3.FilterChain:
		return v.GetTransportSocket().GetTypedConfig()
	}
	return nil
}

// validator is what the generated Envoy types offer.
type validator interface{ ValidateAll() error }

// validateShallow runs the message's own validation (which does not look
// inside Any values).
func validateShallow(m proto.Message) error {
	if v, ok := m.(validator); ok {
		return v.ValidateAll()
	}
	return nil
}

// validateDeep validates m and, recursively, the content of every Any in it
// whose type is linked.
func validateDeep(m proto.Message) error {
	if err := validateShallow(m); err != nil {
		return err
	}
	return walkAnys(m.ProtoReflect(), nil, validateAny)
}

// validateAny validates the content of an Any (a type that is not linked
// cannot be decoded: decoding the patch value already required it).
func validateAny(a *anypb.Any) error {
	m, err := a.UnmarshalNew()
	if err != nil {
		return fmt.Errorf("%s: %v", a.GetTypeUrl(), err)
	}
	if err := validateDeep(m); err != nil {
		return fmt.Errorf("%s: %v", a.GetTypeUrl(), err)
	}
	return nil
}

// walkAnys calls f for every Any reachable from m through message, list and
// map fields (not inside the Any values themselves), except skip.
func walkAnys(m protoreflect.Message, skip *anypb.Any, f func(*anypb.Any) error) error {
	var err error
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		if fd.Message() == nil {
			return true
		}
		visit := func(mv protoreflect.Message) bool {
			if a, ok := mv.Interface().(*anypb.Any); ok {
				if a != skip {
					err = f(a)
				}
			} else {
				err = walkAnys(mv, skip, f)
			}
			return err == nil
		}
		switch {
		case fd.IsList():
			l := v.List()
			for i := 0; i < l.Len(); i++ {
				if !visit(l.Get(i).Message()) {
					return false
				}
			}
		case fd.IsMap():
			if fd.MapValue().Message() == nil {
				return true
			}
			v.Map().Range(func(_ protoreflect.MapKey, mv protoreflect.Value) bool { return visit(mv.Message()) })
		default:
			return visit(v.Message())
		}
		return err == nil
	})
	return err
}
