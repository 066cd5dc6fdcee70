package xds

import (
	"bytes"
	"fmt"

	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/encoding"
	protocodec "google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/anypb"
)

// GRPCServerOptions are the options a gRPC server serving ADS needs to
// hold little per connection: a codec that sends responses without copying
// the resources into them; write buffers taken from a pool for each write
// rather than held by every connection (connections are idle between
// pushes); and a small read buffer, since what proxies send is small (ACKs
// and subscriptions; a read larger than the buffer bypasses it anyway).
// None of this changes what is on the wire.
func (s *DiscoveryServer) GRPCServerOptions() []grpc.ServerOption {
	return []grpc.ServerOption{
		grpc.ForceServerCodecV2(responseCodec{base: encoding.GetCodecV2(protocodec.Name), enc: s.enc}),
		grpc.SharedWriteBuffer(true),
		grpc.ReadBufferSize(readBufferSize),
	}
}

// readBufferSize is the per-connection read buffer (gRPC's default: 32 KiB).
const readBufferSize = 4 << 10

// responseCodec encodes discovery responses as the standard proto codec
// does, byte for byte, but without copying the serialised resources: the
// frame references the Any values shared by every connection through the
// generators' caches, and only the small framing around them (names,
// versions, nonce, tags and lengths) is written per response. The default
// codec marshals each response into a buffer of its own, a full copy of the
// config per connection held until the proxy has read it. Every other
// message (and decoding) goes to the standard codec.
type responseCodec struct {
	base encoding.CodecV2
	// enc are the encodings of the server's resources
	enc *Encodings
}

func (c responseCodec) Name() string { return protocodec.Name }

func (c responseCodec) Unmarshal(data mem.BufferSlice, v any) error { return c.base.Unmarshal(data, v) }

func (c responseCodec) Marshal(v any) (mem.BufferSlice, error) {
	var out mem.BufferSlice
	var ok bool
	switch m := v.(type) {
	case *discovery.DiscoveryResponse:
		out, ok = encodeResponse(m)
	case *discovery.DeltaDiscoveryResponse:
		out, ok = encodeDeltaResponse(m, c.enc)
	}
	if !ok {
		return c.base.Marshal(v)
	}
	if verifyEncoding {
		if err := sameAsProto(out, v.(proto.Message)); err != nil {
			out.Free()
			return nil, err
		}
	}
	return out, nil
}

// verifyEncoding makes the codec check every response it splices against
// proto.Marshal of the message (the xdsverify build tag, and this
// package's tests). A cached encoding is sent as it is: a resource changed
// after NewResource made it would go out as its old bytes, and this is
// where that shows.
var verifyEncoding = verifyTag

// sameAsProto reports how a spliced encoding differs from the standard
// one. The responses' fields hold no maps, so proto.Marshal is
// deterministic here.
func sameAsProto(got mem.BufferSlice, m proto.Message) error {
	want, err := proto.Marshal(m)
	if err != nil {
		return err
	}
	b := got.Materialize()
	if bytes.Equal(b, want) {
		return nil
	}
	i := 0
	for i < len(b) && i < len(want) && b[i] == want[i] {
		i++
	}
	return fmt.Errorf("xds codec: the spliced %T differs from proto.Marshal at byte %d of %d (%d spliced): a cached resource was changed after it was encoded",
		m, i, len(want), len(b))
}

// inlineBelow is the size under which a resource value is copied into the
// framing rather than referenced: small values (load assignments) cost less
// copied than as a buffer of their own.
const inlineBelow = 512

// spliceWriter builds an encoding as framing bytes interleaved with
// references to shared values.
type spliceWriter struct {
	buf   []byte // framing not yet cut into a buffer
	parts mem.BufferSlice
}

// newSpliceWriter sizes the framing and the buffer list up front, from
// the estimates of the caller, so that neither grows while writing.
func newSpliceWriter(framing, refs int) *spliceWriter {
	return &spliceWriter{buf: make([]byte, 0, framing), parts: make(mem.BufferSlice, 0, refs+1)}
}

func (w *spliceWriter) bytesField(num protowire.Number, b []byte) {
	w.buf = protowire.AppendTag(w.buf, num, protowire.BytesType)
	w.buf = protowire.AppendVarint(w.buf, uint64(len(b)))
	w.value(b)
}

func (w *spliceWriter) stringField(num protowire.Number, s string) {
	if s == "" {
		return // proto3 scalars at their zero value are not encoded
	}
	w.buf = protowire.AppendTag(w.buf, num, protowire.BytesType)
	w.buf = protowire.AppendString(w.buf, s)
}

// value appends b, copied when small, referenced otherwise.
func (w *spliceWriter) value(b []byte) {
	if len(b) < inlineBelow {
		w.buf = append(w.buf, b...)
		return
	}
	w.cut()
	w.parts = append(w.parts, mem.SliceBuffer(b))
}

// cut closes the pending framing into a buffer. The next framing goes on
// in the rest of the same backing array, after the bytes cut, which are
// never written again.
func (w *spliceWriter) cut() {
	if len(w.buf) > 0 {
		w.parts = append(w.parts, mem.SliceBuffer(w.buf))
		w.buf = w.buf[len(w.buf):]
	}
}

func (w *spliceWriter) done() mem.BufferSlice {
	w.cut()
	return w.parts
}

// anySize is the encoded size of an Any (as a message body), and whether
// it can be spliced: nil, or carrying unknown fields, it is left to the
// standard codec.
func anySize(a *anypb.Any) (int, bool) {
	if a == nil || len(a.ProtoReflect().GetUnknown()) > 0 {
		return 0, false
	}
	n := 0
	if a.TypeUrl != "" {
		n += protowire.SizeTag(1) + protowire.SizeBytes(len(a.TypeUrl))
	}
	if len(a.Value) > 0 {
		n += protowire.SizeTag(2) + protowire.SizeBytes(len(a.Value))
	}
	return n, true
}

// writeAny writes an Any as a length-delimited field num.
func (w *spliceWriter) writeAny(num protowire.Number, a *anypb.Any, size int) {
	w.buf = protowire.AppendTag(w.buf, num, protowire.BytesType)
	w.buf = protowire.AppendVarint(w.buf, uint64(size))
	w.stringField(1, a.TypeUrl)
	if len(a.Value) > 0 {
		w.bytesField(2, a.Value)
	}
}

// rest marshals the fields of m numbered above after, all of them set on a
// new message: the standard encoding of what follows the spliced fields
// (fields are encoded in number order). ok is false when m carries unknown
// fields, which the standard codec places after all known ones.
func rest(m proto.Message, after protowire.Number) ([]byte, bool) {
	src := m.ProtoReflect()
	if len(src.GetUnknown()) > 0 {
		return nil, false
	}
	dst := src.New()
	src.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		if fd.Number() > after {
			dst.Set(fd, v)
		}
		return true
	})
	b, err := proto.Marshal(dst.Interface())
	return b, err == nil
}

// encodeResponse encodes a state-of-the-world response: version_info (1),
// resources (2), then the other fields.
func encodeResponse(r *discovery.DiscoveryResponse) (mem.BufferSlice, bool) {
	tail, ok := rest(r, 2)
	if !ok {
		return nil, false
	}
	sizes := make([]int, len(r.Resources))
	framing, refs := len(tail)+len(r.VersionInfo)+16, 0
	for i, a := range r.Resources {
		n, ok := anySize(a)
		if !ok {
			return nil, false
		}
		sizes[i] = n
		framing += 16 + len(a.TypeUrl) + inlined(a.Value)
		refs += referenced(a.Value)
	}
	w := newSpliceWriter(framing, refs)
	w.stringField(1, r.VersionInfo)
	for i, a := range r.Resources {
		w.writeAny(2, a, sizes[i])
	}
	w.buf = append(w.buf, tail...)
	return w.done(), true
}

// encodeDeltaResponse encodes a delta response: system_version_info (1),
// resources (2), then the other fields. A resource made by NewResource is
// sent as the encoding it was built with, whole, so the framing per
// resource is a tag and a length; another plain resource is framed around
// its value; any other is encoded in full.
func encodeDeltaResponse(r *discovery.DeltaDiscoveryResponse, enc *Encodings) (mem.BufferSlice, bool) {
	tail, ok := rest(r, 2)
	if !ok {
		return nil, false
	}
	type item struct {
		whole []byte // the resource's encoding, when there is one
		body  int    // else the size of a plain resource's
		any   int
	}
	items := make([]item, len(r.Resources))
	framing, refs := len(tail)+len(r.SystemVersionInfo)+16, 0
	for i, res := range r.Resources {
		if res == nil {
			return nil, false
		}
		it := &items[i]
		if b := enc.encoding(res); b != nil {
			it.whole = b
		} else if plainResource(res) && res.Resource != nil {
			if it.any, ok = anySize(res.Resource); !ok {
				return nil, false
			}
			it.body = protowire.SizeTag(2) + protowire.SizeBytes(it.any)
			if res.Version != "" {
				it.body += protowire.SizeTag(1) + protowire.SizeBytes(len(res.Version))
			}
			if res.Name != "" {
				it.body += protowire.SizeTag(3) + protowire.SizeBytes(len(res.Name))
			}
			framing += 32 + len(res.Version) + len(res.Name) + len(res.Resource.TypeUrl) + inlined(res.Resource.Value)
			refs += referenced(res.Resource.Value)
			continue
		} else if it.whole, ok = encodeResource(res); !ok {
			return nil, false
		}
		framing += 8 + inlined(it.whole)
		refs += referenced(it.whole)
	}
	w := newSpliceWriter(framing, refs)
	w.stringField(1, r.SystemVersionInfo)
	for i, res := range r.Resources {
		it := items[i]
		if it.whole != nil {
			w.bytesField(2, it.whole)
			continue
		}
		w.buf = protowire.AppendTag(w.buf, 2, protowire.BytesType)
		w.buf = protowire.AppendVarint(w.buf, uint64(it.body))
		w.stringField(1, res.Version)
		w.writeAny(2, res.Resource, it.any)
		w.stringField(3, res.Name)
	}
	w.buf = append(w.buf, tail...)
	return w.done(), true
}

// plainResource reports whether a delta resource sets nothing beyond its
// version, value and name (what the generators produce), so that its name
// is encoded here rather than through reflection. TestResourceFieldsKnown
// fails when the type grows a field this does not check.
func plainResource(r *discovery.Resource) bool {
	return r.ResourceName == nil && len(r.Aliases) == 0 && r.Ttl == nil && r.CacheControl == nil && r.Metadata == nil &&
		len(r.ProtoReflect().GetUnknown()) == 0
}

// referenced is how many buffers a value adds to the encoding: the value,
// and the framing cut before it.
func referenced(b []byte) int {
	if len(b) < inlineBelow {
		return 0
	}
	return 2
}

// inlined is how many bytes of a value the framing holds.
func inlined(b []byte) int {
	if len(b) < inlineBelow {
		return len(b)
	}
	return 0
}
