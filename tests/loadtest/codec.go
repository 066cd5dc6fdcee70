package main

import (
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc/encoding"
	protocodec "google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
)

// responseCodec decodes the sidecars' delta responses without copying
// their resources: each resource's value is a slice of the received
// message, which is copied out of gRPC's buffers once (the standard codec
// copies it twice and allocates a message per resource on top). The
// simulated sidecars share the cores with the control plane they time, so
// what they spend receiving is taken from it. Everything else (requests,
// and the fields of a response besides the resources' names, versions and
// values) goes through the standard codec, so the decoded response is the
// one proto.Unmarshal gives.
type responseCodec struct{ base encoding.CodecV2 }

func newResponseCodec() responseCodec {
	return responseCodec{base: encoding.GetCodecV2(protocodec.Name)}
}

func (c responseCodec) Name() string { return protocodec.Name }

func (c responseCodec) Marshal(v any) (mem.BufferSlice, error) { return c.base.Marshal(v) }

func (c responseCodec) Unmarshal(data mem.BufferSlice, v any) error {
	r, ok := v.(*discovery.DeltaDiscoveryResponse)
	if !ok {
		return c.base.Unmarshal(data, v)
	}
	return decodeDeltaResponse(data.Materialize(), r)
}

// decodeDeltaResponse decodes b into r, r's resources referencing b.
func decodeDeltaResponse(b []byte, r *discovery.DeltaDiscoveryResponse) error {
	const resourcesField = 2
	var rest []byte // the other fields, for proto.Unmarshal
	var resources []*discovery.Resource
	err := eachField(b, func(num protowire.Number, field, value []byte) error {
		if num != resourcesField || value == nil {
			rest = append(rest, field...)
			return nil
		}
		res, err := decodeResource(value)
		resources = append(resources, res)
		return err
	})
	if err != nil {
		return err
	}
	r.Reset()
	if err := proto.Unmarshal(rest, r); err != nil {
		return err
	}
	r.Resources = resources
	return nil
}

// decodeResource decodes a Resource whose Any value references b.
func decodeResource(b []byte) (*discovery.Resource, error) {
	const versionField, resourceField, nameField = 1, 2, 3
	res := &discovery.Resource{}
	var rest []byte
	err := eachField(b, func(num protowire.Number, field, value []byte) error {
		switch {
		case value == nil:
			rest = append(rest, field...)
		case num == versionField:
			res.Version = string(value)
		case num == nameField:
			res.Name = string(value)
		case num == resourceField:
			a, err := decodeAny(value)
			res.Resource = a
			return err
		default:
			rest = append(rest, field...)
		}
		return nil
	})
	return res, mergeRest(err, rest, res)
}

// decodeAny decodes an Any whose value references b.
func decodeAny(b []byte) (*anypb.Any, error) {
	const typeURLField, valueField = 1, 2
	a := &anypb.Any{}
	var rest []byte
	err := eachField(b, func(num protowire.Number, field, value []byte) error {
		switch {
		case value != nil && num == typeURLField:
			a.TypeUrl = string(value)
		case value != nil && num == valueField:
			a.Value = value[:len(value):len(value)]
		default:
			rest = append(rest, field...)
		}
		return nil
	})
	return a, mergeRest(err, rest, a)
}

// mergeRest merges the rare other fields of a message, rest, into m with
// the standard decoder, unless decoding already failed with err.
func mergeRest(err error, rest []byte, m proto.Message) error {
	if err != nil || len(rest) == 0 {
		return err
	}
	return proto.UnmarshalOptions{Merge: true}.Unmarshal(rest, m)
}

// eachField calls fn with each top-level field of message b: its number,
// its whole encoding (tag included) and, for a length-delimited field, its
// value (non-nil, possibly empty; nil for the other wire types).
func eachField(b []byte, fn func(num protowire.Number, field, value []byte) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return protowire.ParseError(n)
		}
		m := protowire.ConsumeFieldValue(num, typ, b[n:])
		if m < 0 {
			return protowire.ParseError(m)
		}
		var value []byte
		if typ == protowire.BytesType {
			v, _ := protowire.ConsumeBytes(b[n:])
			value = v[:len(v):len(v)]
		}
		if err := fn(num, b[:n+m], value); err != nil {
			return err
		}
		b = b[n+m:]
	}
	return nil
}
