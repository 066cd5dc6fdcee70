package generators

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/anypb"
)

// regexMatcher is the Envoy message whose regex Envoy compiles as RE2 when
// it loads the resource; ValidateAll checks only that it is not empty.
const regexMatcher protoreflect.FullName = "envoy.type.matcher.v3.RegexMatcher"

// checkBeyondValidation finds what Envoy would reject and the protos'
// ValidateAll does not: a regex that does not compile as RE2. Go's regexp
// implements RE2's syntax (it rejects the same constructs: backreferences,
// lookaround, possessive repetition), so a compile error here is one in
// Envoy. Typed configs of the regexCarriers packed in Any are checked
// too. It names the field path of the first problem.
func checkBeyondValidation(m proto.Message) error {
	if err := walk(m.ProtoReflect()); err != nil {
		return err
	}
	return nil
}

// badRegex is a regex that does not compile, with the field path to it,
// built as the walk unwinds (nothing is allocated while all is well).
type badRegex struct {
	path []string // innermost first
	re   string
	err  error
}

func (e *badRegex) Error() string {
	var b strings.Builder
	for i := len(e.path) - 1; i >= 0; i-- {
		b.WriteString(e.path[i])
	}
	return fmt.Sprintf("%s.regex %q is not a valid RE2 regex: %v", b.String(), e.re, e.err)
}

func (e *badRegex) in(segment string) *badRegex {
	e.path = append(e.path, segment)
	return e
}

func walk(m protoreflect.Message) *badRegex {
	if !mayHoldRegex(m.Descriptor()) {
		return nil
	}
	if m.Descriptor().FullName() == regexMatcher {
		re := m.Get(m.Descriptor().Fields().ByName("regex")).String()
		if _, err := regexp.Compile(re); err != nil {
			return &badRegex{re: re, err: err}
		}
		return nil
	}
	if a, ok := m.Interface().(*anypb.Any); ok {
		if !regexCarriers[a.GetTypeUrl()] {
			return nil
		}
		inner, err := a.UnmarshalNew()
		if err != nil {
			return nil // not a type this binary knows: nothing to check
		}
		return walk(inner.ProtoReflect())
	}
	var bad *badRegex
	for _, fd := range reachingFields(m.Descriptor()) {
		if !m.Has(fd) {
			continue
		}
		v := m.Get(fd)
		switch {
		case fd.IsList():
			l := v.List()
			for i := 0; i < l.Len() && bad == nil; i++ {
				if bad = walk(l.Get(i).Message()); bad != nil {
					bad.in("." + string(fd.Name()) + "[" + strconv.Itoa(i) + "]")
				}
			}
		case fd.IsMap():
			v.Map().Range(func(k protoreflect.MapKey, mv protoreflect.Value) bool {
				if bad = walk(mv.Message()); bad != nil {
					bad.in("." + string(fd.Name()) + "[" + k.String() + "]")
				}
				return bad == nil
			})
		default:
			if bad = walk(v.Message()); bad != nil {
				bad.in("." + string(fd.Name()))
			}
		}
		if bad != nil {
			return bad
		}
	}
	return bad
}

// regexCarriers are the typed configs whose regexes come from user
// config (routes inline in a connection manager, authorization rules);
// the others (TLS contexts, telemetry filters) hold none we generate from
// user input, and unpacking every Any would double the cost of a full
// push.
var regexCarriers = map[string]bool{
	"type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager": true,
	"type.googleapis.com/envoy.extensions.filters.http.rbac.v3.RBAC":                                        true,
	"type.googleapis.com/envoy.extensions.filters.network.rbac.v3.RBAC":                                     true,
}

// carrierFields are the Any fields a regexCarrier is packed in: network
// filters (connection manager, network RBAC) and HTTP filters (RBAC). Any
// fields elsewhere (retry predicates, per-route filter configs, transport
// sockets) never hold one, so the walk does not enter them; without this
// every route would be walked down to its last Any.
var carrierFields = map[protoreflect.FullName]bool{
	"envoy.config.listener.v3.Filter.typed_config":                                        true,
	"envoy.extensions.filters.network.http_connection_manager.v3.HttpFilter.typed_config": true,
}

// fieldReaches reports whether a message field of type d may lead to a
// RegexMatcher.
func fieldReaches(fd protoreflect.FieldDescriptor, d protoreflect.MessageDescriptor) bool {
	if d.FullName() == "google.protobuf.Any" {
		return carrierFields[fd.FullName()]
	}
	return mayHoldRegex(d)
}

// fieldsReaching memoises reachingFields by message name.
var fieldsReaching sync.Map // protoreflect.FullName -> []protoreflect.FieldDescriptor

// reachingFields are the message fields of d that may lead to a
// RegexMatcher, the only ones the walk looks at.
func reachingFields(d protoreflect.MessageDescriptor) []protoreflect.FieldDescriptor {
	if v, ok := fieldsReaching.Load(d.FullName()); ok {
		return v.([]protoreflect.FieldDescriptor)
	}
	var out []protoreflect.FieldDescriptor
	fields := d.Fields()
	for i := 0; i < fields.Len(); i++ {
		fd := fields.Get(i)
		md := fd.Message()
		if fd.IsMap() {
			md = fd.MapValue().Message()
		}
		if md != nil && fieldReaches(fd, md) {
			out = append(out, fd)
		}
	}
	fieldsReaching.Store(d.FullName(), out)
	return out
}

// regexReach memoises mayHoldRegex by message name.
var regexReach sync.Map // protoreflect.FullName -> bool

// mayHoldRegex reports whether a message of type d can contain a
// RegexMatcher, directly or through an Any of carrierFields (an Any
// itself may).
func mayHoldRegex(d protoreflect.MessageDescriptor) bool {
	if v, ok := regexReach.Load(d.FullName()); ok {
		return v.(bool)
	}
	r := reach(d, map[protoreflect.FullName]bool{})
	regexReach.Store(d.FullName(), r)
	return r
}

func reach(d protoreflect.MessageDescriptor, visiting map[protoreflect.FullName]bool) bool {
	switch d.FullName() {
	case regexMatcher, "google.protobuf.Any":
		return true
	}
	if v, ok := regexReach.Load(d.FullName()); ok {
		return v.(bool)
	}
	if visiting[d.FullName()] {
		return false // a cycle adds nothing new
	}
	visiting[d.FullName()] = true
	fields := d.Fields()
	for i := 0; i < fields.Len(); i++ {
		fd := fields.Get(i)
		md := fd.Message()
		if fd.IsMap() {
			md = fd.MapValue().Message()
		}
		if md == nil {
			continue
		}
		if md.FullName() == "google.protobuf.Any" {
			if carrierFields[fd.FullName()] {
				return true
			}
			continue
		}
		if reach(md, visiting) {
			return true
		}
	}
	return false
}
