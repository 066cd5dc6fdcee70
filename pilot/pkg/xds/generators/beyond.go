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
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		if fd.Kind() != protoreflect.MessageKind && fd.Kind() != protoreflect.GroupKind {
			return true
		}
		switch {
		case fd.IsList():
			l := v.List()
			for i := 0; i < l.Len() && bad == nil; i++ {
				if bad = walk(l.Get(i).Message()); bad != nil {
					bad.in("." + string(fd.Name()) + "[" + strconv.Itoa(i) + "]")
				}
			}
		case fd.IsMap():
			if fd.MapValue().Kind() == protoreflect.MessageKind {
				v.Map().Range(func(k protoreflect.MapKey, mv protoreflect.Value) bool {
					if bad = walk(mv.Message()); bad != nil {
						bad.in("." + string(fd.Name()) + "[" + k.String() + "]")
					}
					return bad == nil
				})
			}
		default:
			if bad = walk(v.Message()); bad != nil {
				bad.in("." + string(fd.Name()))
			}
		}
		return bad == nil
	})
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

// regexReach memoises mayHoldRegex by message name.
var regexReach sync.Map // protoreflect.FullName -> bool

// mayHoldRegex reports whether a message of type d can contain a
// RegexMatcher, directly or through an Any (any Any may).
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
		if fd.IsMap() {
			fd = fd.MapValue()
		}
		if fd.Message() != nil && reach(fd.Message(), visiting) {
			return true
		}
	}
	return false
}
