package xds

import (
	"runtime"
	"sync"
	"weak"

	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/types/known/anypb"
)

// Encodings holds the encoding of the resources NewResource made, by
// resource, for the responses of one server (its codec reads them); an
// entry goes when its resource is collected. nil holds none: its resources
// are framed by the codec like any other (the same bytes on the wire).
type Encodings struct {
	m sync.Map // weak.Pointer[discovery.Resource] -> []byte
}

// Encodings is where the resources of this server's generators keep their
// encodings (see NewResource).
func (s *DiscoveryServer) Encodings() *Encodings { return s.enc }

// encoding is the encoding NewResource made res in (nil: none).
func (e *Encodings) encoding(res *discovery.Resource) []byte {
	if e == nil {
		return nil
	}
	if b, ok := e.m.Load(weak.Make(res)); ok {
		return b.([]byte)
	}
	return nil
}

// NewResource makes the delta resource of a serialised value, with its
// content version, for a generator's cache. The resource is built inside
// its own encoding, which delta responses send whole: its value is a slice
// of that encoding, so the bytes are held once, and a response shared by
// thousands of connections costs each of them a tag and a length per
// resource rather than a copy or a framing of its own. The resource and
// its value must not be modified.
func (e *Encodings) NewResource(typeURL, name string, value []byte) *discovery.Resource {
	version := ContentVersion(value)
	anyLen := protowire.SizeTag(2) + protowire.SizeBytes(len(value))
	if typeURL != "" {
		anyLen += protowire.SizeTag(1) + protowire.SizeBytes(len(typeURL))
	}
	size := protowire.SizeTag(1) + protowire.SizeBytes(len(version)) + protowire.SizeTag(2) + protowire.SizeBytes(anyLen)
	if name != "" {
		size += protowire.SizeTag(3) + protowire.SizeBytes(len(name))
	}
	// the standard encoding of the resource's fields: version (1),
	// resource (2: type_url 1, value 2), name (3)
	b := make([]byte, 0, size)
	b = protowire.AppendString(protowire.AppendTag(b, 1, protowire.BytesType), version)
	b = protowire.AppendVarint(protowire.AppendTag(b, 2, protowire.BytesType), uint64(anyLen))
	if typeURL != "" {
		b = protowire.AppendString(protowire.AppendTag(b, 1, protowire.BytesType), typeURL)
	}
	b = protowire.AppendVarint(protowire.AppendTag(b, 2, protowire.BytesType), uint64(len(value)))
	start := len(b)
	b = append(b, value...)
	v := b[start:len(b):len(b)]
	if name != "" {
		b = protowire.AppendString(protowire.AppendTag(b, 3, protowire.BytesType), name)
	}
	res := &discovery.Resource{Name: name, Version: version, Resource: &anypb.Any{TypeUrl: typeURL, Value: v}}
	if len(value) == 0 || e == nil {
		// an empty value is not encoded: leave it to the codec
		return res
	}
	k := weak.Make(res)
	e.m.Store(k, b)
	runtime.AddCleanup(res, func(k weak.Pointer[discovery.Resource]) { e.m.Delete(k) }, k)
	return res
}

// encodeResource is the standard encoding of a delta resource's fields
// (without the tag and length that embed it in a response).
func encodeResource(res *discovery.Resource) ([]byte, bool) {
	var tail []byte
	if !plainResource(res) {
		var ok bool
		if tail, ok = rest(res, 2); !ok {
			return nil, false
		}
	}
	anyLen := 0
	size := len(tail) + 8 + len(res.Version) + len(res.Name)
	if res.Resource != nil {
		var ok bool
		if anyLen, ok = anySize(res.Resource); !ok {
			return nil, false
		}
		size += 6 + anyLen
	}
	b := make([]byte, 0, size)
	if res.Version != "" {
		b = protowire.AppendString(protowire.AppendTag(b, 1, protowire.BytesType), res.Version)
	}
	if a := res.Resource; a != nil {
		b = protowire.AppendVarint(protowire.AppendTag(b, 2, protowire.BytesType), uint64(anyLen))
		if a.TypeUrl != "" {
			b = protowire.AppendString(protowire.AppendTag(b, 1, protowire.BytesType), a.TypeUrl)
		}
		if len(a.Value) > 0 {
			b = protowire.AppendBytes(protowire.AppendTag(b, 2, protowire.BytesType), a.Value)
		}
	}
	if tail != nil {
		b = append(b, tail...)
	} else if res.Name != "" {
		b = protowire.AppendString(protowire.AppendTag(b, 3, protowire.BytesType), res.Name)
	}
	return b, true
}
