package envoyfilter

import (
	"fmt"
	"sort"
	"strings"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	networking "istio.io/api/networking/v1alpha3"
)

// targetsMeet reports whether two patches of one applyTo may act on the
// same resource: no field both matches set differs (the list a list patch
// acts on is its parent: the anchors are compared by the caller).
func targetsMeet(a, b *patch) bool {
	switch a.applyTo {
	case networking.EnvoyFilter_LISTENER, networking.EnvoyFilter_LISTENER_FILTER, networking.EnvoyFilter_FILTER_CHAIN,
		networking.EnvoyFilter_NETWORK_FILTER, networking.EnvoyFilter_HTTP_FILTER:
		return listenersMeet(a, b)
	case networking.EnvoyFilter_ROUTE_CONFIGURATION, networking.EnvoyFilter_VIRTUAL_HOST, networking.EnvoyFilter_HTTP_ROUTE:
		return routesMeet(a, b)
	case networking.EnvoyFilter_CLUSTER:
		return clustersMeet(a.match.GetCluster(), b.match.GetCluster())
	}
	return true
}

// differ: both set, to different values.
func differ[T comparable](a, b T) bool {
	var zero T
	return a != zero && b != zero && a != b
}

func listenersMeet(a, b *patch) bool {
	la, lb := a.match.GetListener(), b.match.GetListener()
	if differ(la.GetName(), lb.GetName()) || differ(la.GetPortNumber(), lb.GetPortNumber()) {
		return false
	}
	if a.applyTo == networking.EnvoyFilter_LISTENER || a.applyTo == networking.EnvoyFilter_LISTENER_FILTER {
		return true
	}
	fa, fb := la.GetFilterChain(), lb.GetFilterChain()
	if differ(fa.GetName(), fb.GetName()) || differ(fa.GetSni(), fb.GetSni()) ||
		differ(fa.GetTransportProtocol(), fb.GetTransportProtocol()) || differ(fa.GetDestinationPort(), fb.GetDestinationPort()) {
		return false
	}
	if a.applyTo == networking.EnvoyFilter_HTTP_FILTER {
		// the connection manager both change
		return !(fa.GetFilter() != nil && fb.GetFilter() != nil && fa.GetFilter().GetName() != fb.GetFilter().GetName())
	}
	return true
}

func routesMeet(a, b *patch) bool {
	ra, rb := a.match.GetRouteConfiguration(), b.match.GetRouteConfiguration()
	if differ(ra.GetName(), rb.GetName()) || differ(ra.GetPortNumber(), rb.GetPortNumber()) ||
		differ(ra.GetPortName(), rb.GetPortName()) || differ(ra.GetGateway(), rb.GetGateway()) {
		return false
	}
	if a.applyTo == networking.EnvoyFilter_ROUTE_CONFIGURATION {
		return true
	}
	va, vb := ra.GetVhost(), rb.GetVhost()
	return !differ(va.GetName(), vb.GetName()) && !differ(va.GetDomainName(), vb.GetDomainName())
}

func clustersMeet(a, b *networking.EnvoyFilter_ClusterMatch) bool {
	type fields struct {
		service, subset string
		port            int
	}
	of := func(m *networking.EnvoyFilter_ClusterMatch) (fields, bool) {
		if m.GetName() != "" {
			_, subset, host, port := parseSubsetKey(m.GetName())
			return fields{service: host, subset: subset, port: port}, true
		}
		return fields{service: m.GetService(), subset: m.GetSubset(), port: int(m.GetPortNumber())}, false
	}
	if differ(a.GetName(), b.GetName()) {
		return false
	}
	fa, na := of(a)
	fb, nb := of(b)
	// a name pins every field (empty ones included)
	switch {
	case na && nb:
		return true
	case na:
		return (fb.service == "" || fb.service == fa.service) && (fb.subset == "" || fb.subset == fa.subset) &&
			(fb.port == 0 || fb.port == fa.port)
	case nb:
		return (fa.service == "" || fa.service == fb.service) && (fa.subset == "" || fa.subset == fb.subset) &&
			(fa.port == 0 || fa.port == fb.port)
	}
	return !differ(fa.service, fb.service) && !differ(fa.subset, fb.subset) && !differ(fa.port, fb.port)
}

// mergeOrderDependence: two merges that set a field differently (or both
// append different elements to a list) give a result that depends on
// their order.
func mergeOrderDependence(a, b *patch) string {
	la, lb := mergeLeaves(a), mergeLeaves(b)
	var clash []string
	for k, va := range la {
		if vb, ok := lb[k]; ok && va != vb {
			clash = append(clash, k)
		}
	}
	if len(clash) == 0 {
		return ""
	}
	sort.Strings(clash)
	if len(clash) > 3 {
		clash = append(clash[:3], "…")
	}
	return fmt.Sprintf("both merge into the same place and set %s differently, so the one applied last wins", strings.Join(clash, ", "))
}

// mergeLeaves are the fields a MERGE sets, by path, with their values (a
// list: its elements; a message merged as a whole, a Duration: its
// encoding). A filter merge's typed_config is read through its type.
func mergeLeaves(p *patch) map[string]string {
	out := map[string]string{}
	if p.value == nil {
		return out
	}
	collectLeaves(p.value.ProtoReflect(), "", out, p.mergedAny())
	if p.merged != nil {
		collectLeaves(p.merged.ProtoReflect(), "typed_config.", out, nil)
	}
	return out
}

func collectLeaves(m protoreflect.Message, prefix string, out map[string]string, skip proto.Message) {
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		path := prefix + string(fd.Name())
		switch {
		case fd.IsList():
			out[path] = encodeValue(fd, v)
		case fd.IsMap():
			// entries merge by key
			v.Map().Range(func(k protoreflect.MapKey, mv protoreflect.Value) bool {
				out[path+"["+k.String()+"]"] = encodeValue(fd.MapValue(), mv)
				return true
			})
		case fd.Message() != nil:
			if skip != nil && v.Message().Interface() == skip {
				return true
			}
			if fd.Message().FullName() == durationName || fd.Message().FullName() == "google.protobuf.Any" {
				out[path] = encodeValue(fd, v)
				return true
			}
			collectLeaves(v.Message(), path+".", out, skip)
		default:
			out[path] = v.String()
		}
		return true
	})
}

func encodeValue(fd protoreflect.FieldDescriptor, v protoreflect.Value) string {
	var sb strings.Builder
	opts := proto.MarshalOptions{Deterministic: true}
	switch {
	case fd.IsList():
		l := v.List()
		for i := 0; i < l.Len(); i++ {
			if fd.Message() != nil {
				b, _ := opts.Marshal(l.Get(i).Message().Interface())
				sb.Write(b)
			} else {
				sb.WriteString(l.Get(i).String())
			}
			sb.WriteByte(0)
		}
	case fd.Message() != nil:
		b, _ := opts.Marshal(v.Message().Interface())
		sb.Write(b)
	default:
		sb.WriteString(v.String())
	}
	return sb.String()
}

// sameValue: two patches carry equal values.
func sameValue(a, b *patch) bool { return proto.Equal(a.value, b.value) }
