package validation

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	bootstrap "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	cluster "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listener "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	route "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	hcm "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"github.com/golang/protobuf/jsonpb"            //nolint:staticcheck // the decoder Istio uses for patch values
	legacyproto "github.com/golang/protobuf/proto" //nolint:staticcheck // its message type
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"
	"google.golang.org/protobuf/types/known/structpb"
	networking "istio.io/api/networking/v1alpha3"
)

// efPatchObject returns an empty message of the Envoy type a patch of
// applyTo holds, or nil for an applyTo that names none.
func efPatchObject(applyTo networking.EnvoyFilter_ApplyTo) proto.Message {
	switch applyTo {
	case networking.EnvoyFilter_CLUSTER:
		return &cluster.Cluster{}
	case networking.EnvoyFilter_LISTENER:
		return &listener.Listener{}
	case networking.EnvoyFilter_ROUTE_CONFIGURATION:
		return &route.RouteConfiguration{}
	case networking.EnvoyFilter_FILTER_CHAIN:
		return &listener.FilterChain{}
	case networking.EnvoyFilter_HTTP_FILTER:
		return &hcm.HttpFilter{}
	case networking.EnvoyFilter_NETWORK_FILTER:
		return &listener.Filter{}
	case networking.EnvoyFilter_VIRTUAL_HOST:
		return &route.VirtualHost{}
	case networking.EnvoyFilter_HTTP_ROUTE:
		return &route.Route{}
	case networking.EnvoyFilter_EXTENSION_CONFIG:
		return &core.TypedExtensionConfig{}
	case networking.EnvoyFilter_BOOTSTRAP:
		return &bootstrap.Bootstrap{}
	case networking.EnvoyFilter_LISTENER_FILTER:
		return &listener.ListenerFilter{}
	}
	return nil
}

// efCheckValue checks that a patch value decodes as the Envoy type of
// applyTo, as Istio does, with the legacy jsonpb decoder Istio uses
// (github.com/golang/protobuf/jsonpb): unknown fields are allowed (the value
// may be written for a newer Envoy); wrong types, unknown enum names and bad
// durations are not.
//
// A typed_config (google.protobuf.Any) names its type by URL. Istio resolves
// it among every Envoy extension it links and rejects a type it cannot
// resolve. This istiod resolves the types linked into the running binary; a
// type it does not know is not checked and only warned about, so that it
// never rejects what Istio accepts, except for Envoy's v2 API types, which
// Istio no longer links and rejects.
func efCheckValue(r *Report, p Path, applyTo networking.EnvoyFilter_ApplyTo, value *structpb.Struct) {
	obj := efPatchObject(applyTo)
	if obj == nil {
		r.Errorf(p, "Envoy filter: unknown object type for applyTo %s", applyTo)
		return
	}
	js, err := protojson.Marshal(value)
	if err != nil {
		r.Errorf(p, "Envoy filter: %v", err)
		return
	}
	res := &efAnyResolver{}
	u := jsonpb.Unmarshaler{AllowUnknownFields: true, AnyResolver: res}
	err = u.Unmarshal(bytes.NewReader(js), legacyproto.MessageV1(obj))
	switch {
	case err != nil && len(res.v2) > 0:
		r.Errorf(p, "referenced type unknown (hint: try using the v3 XDS API): Envoy filter: %v", err)
	case err != nil:
		r.Errorf(p, "Envoy filter: %v (the value is not a valid %s)", err, obj.ProtoReflect().Descriptor().FullName())
	}
	for _, url := range res.unknown {
		r.Warnf(p, "Envoy filter: type %s is unknown to this istiod; its value is not checked", url)
	}
}

// efAnyResolver resolves the types of Any values among the linked ones.
// An unknown type decodes as a message without fields, which drops every
// field (AllowUnknownFields), and is recorded; an Envoy v2 type is recorded
// and an error.
type efAnyResolver struct {
	unknown, v2 []string
}

// efOpaque describes a message without fields, which an Any of an unknown
// type decodes as.
var efOpaque = func() protoreflect.MessageDescriptor {
	fd, err := protodesc.NewFile(&descriptorpb.FileDescriptorProto{
		Name:        proto.String("meshplane/validation/opaque.proto"),
		Package:     proto.String("meshplane.validation"),
		Syntax:      proto.String("proto3"),
		MessageType: []*descriptorpb.DescriptorProto{{Name: proto.String("Opaque")}},
	}, nil)
	if err != nil {
		panic(err)
	}
	return fd.Messages().Get(0)
}()

func (e *efAnyResolver) Resolve(url string) (legacyproto.Message, error) {
	mt, err := protoregistry.GlobalTypes.FindMessageByURL(url)
	if err == nil {
		return legacyproto.MessageV1(mt.New().Interface()), nil
	}
	if !errors.Is(err, protoregistry.NotFound) {
		return nil, err
	}
	name := url[strings.LastIndexByte(url, '/')+1:]
	if strings.HasPrefix(name, "envoy.") && (strings.Contains(name, ".v2.") || strings.Contains(name, ".v2alpha.")) {
		e.v2 = append(e.v2, url)
		// Istio's resolver's words
		return nil, fmt.Errorf("could not resolve Any message type: %s", url)
	}
	e.unknown = append(e.unknown, url)
	return legacyproto.MessageV1(dynamicpb.NewMessage(efOpaque)), nil
}
