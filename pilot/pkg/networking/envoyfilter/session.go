package envoyfilter

import (
	"errors"
	"fmt"
	"slices"

	"google.golang.org/protobuf/proto"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/meshplane/istiod/pkg/diag"
	"github.com/meshplane/istiod/pkg/protoconv"
)

// PatchContext is what patching needs beyond the resources and the
// patches: facts of the proxy that Istio reads while matching.
type PatchContext struct {
	// GatewayPorts maps the port of a gateway route configuration
	// ("http.8080": 8080) to the port numbers of the servers behind it, for
	// routeConfiguration.portNumber matches of gateways (Istio's
	// MergedGateway.PortMap). A route port absent from the map is matched
	// directly.
	GatewayPorts map[int][]int
	// InboundClusterHosts are the hostnames of the services behind each
	// inbound cluster, by cluster name ("inbound|9080||"): inbound cluster
	// names carry no hostname, so cluster.service matches these.
	InboundClusterHosts map[string][]string
	// SkipAdds leaves out the listeners and clusters that ADD patches
	// define, for a call that patches part of a proxy's resources (a part
	// shared with other proxies, say); AddedListeners and AddedClusters
	// return them for the call that completes the set.
	SkipAdds bool
}

// session is one call's state: the patches, the context and what was
// dropped.
type session struct {
	ps       *Patches
	pc       PatchContext
	problems []Problem
}

// drop records that p was not applied to resource.
func (s *session) drop(p *patch, resource string, format string, args ...any) {
	s.problems = append(s.problems, Problem{Severity: diag.Error, Namespace: p.filter.Namespace, Name: p.filter.Name,
		Patch: p.index, Resource: resource, Message: "patch not applied: " + fmt.Sprintf(format, args...)})
}

// warn records a note about p on resource (what Istio does silently).
func (s *session) warn(p *patch, resource string, format string, args ...any) {
	s.problems = append(s.problems, Problem{Severity: diag.Warning, Namespace: p.filter.Namespace, Name: p.filter.Name,
		Patch: p.index, Resource: resource, Message: fmt.Sprintf(format, args...)})
}

func (s *session) result() []Problem {
	sortProblems(s.problems)
	return slices.Compact(s.problems)
}

// errMismatch marks a MERGE whose typed_config is not of the target's type.
// Istio's istiod panics on it and recovers by sending that xDS type
// unpatched; here only the patch is left out, on that resource.
var errMismatch = errors.New("typed_config type mismatch")

// typedConfig is a filter's typed_config across the MERGE patches applied
// to it: decoded for the first merge (the decoded message is ours, merged
// in place), packed again once, at the end.
type typedConfig struct {
	orig        anyMessage
	msg         proto.Message // decoded, nil until a merge needs it
	applied     []*patch      // merged into msg, in order
	changed     bool
	undecodable error
}

// mergeTypedConfig merges the typed_config of a filter MERGE into tc and
// validates the result. ok is false when the patch must not apply
// (reported); a config that cannot be decoded is kept, as Istio keeps it.
func (s *session) mergeTypedConfig(p *patch, resource string, tc *typedConfig) (ok bool) {
	if tc.msg == nil && tc.undecodable == nil {
		if tc.msg, tc.undecodable = tc.orig.UnmarshalNew(); tc.undecodable != nil {
			tc.msg = nil
		}
	}
	if tc.undecodable != nil {
		s.warn(p, resource, "typed_config %s not merged: %v", tc.orig.GetTypeUrl(), tc.undecodable)
		return true
	}
	if err := mergeInto(networking.EnvoyFilter_Patch_MERGE, tc.msg, p.merged); err != nil {
		s.drop(p, resource, "its typed_config (%s) is not of the type of the target's (%s); Istio's istiod panics on this "+
			"merge and leaves the rest of the proxy's patching of that xDS type undone", p.merged.ProtoReflect().Descriptor().FullName(),
			tc.orig.GetTypeUrl())
		return false
	}
	if err := validateShallow(tc.msg); err != nil {
		s.drop(p, resource, "the merged typed_config is not a valid %s: %v", tc.msg.ProtoReflect().Descriptor().FullName(), err)
		// start again from the original without this patch (rare)
		tc.msg, _ = tc.orig.UnmarshalNew()
		for _, q := range tc.applied {
			_ = mergeInto(networking.EnvoyFilter_Patch_MERGE, tc.msg, q.merged)
		}
		return false
	}
	tc.applied = append(tc.applied, p)
	tc.changed = true
	return true
}

// result is the typed_config after the merges.
func (tc *typedConfig) result() anyMessage {
	if !tc.changed {
		return tc.orig
	}
	return protoconv.MessageToAny(tc.msg)
}

// mergeFilterConfig merges one filter MERGE into dst (a filter's
// typed_config): the new Any, or dst when Istio keeps the target's config
// (it cannot be decoded); ok is false when the patch must not apply.
func (s *session) mergeFilterConfig(p *patch, resource string, dst anyMessage) (anyMessage, bool) {
	tc := &typedConfig{orig: dst}
	if !s.mergeTypedConfig(p, resource, tc) {
		return nil, false
	}
	return tc.result(), true
}

// mergeWhole merges a MERGE value into a (shallow) copy of target and
// validates the result; ok is false (reported) when the result is not
// valid.
func mergeWhole[T validatedMessage](s *session, p *patch, resource string, target T) (T, bool) {
	next := shallow(target)
	if err := mergeInto(p.op, next, p.value); err != nil {
		s.drop(p, resource, "%v", err)
		return target, false
	}
	if err := next.ValidateAll(); err != nil {
		s.drop(p, resource, "the result is not a valid %s: %v", next.ProtoReflect().Descriptor().FullName(), err)
		return target, false
	}
	return next, true
}

// listOp applies a structural patch (ADD, INSERT_*, REPLACE, REMOVE) to a
// list, as Istio does: without a match of the element, INSERT_BEFORE
// prepends, INSERT_AFTER appends, REPLACE and REMOVE do nothing; with one,
// the first matching element anchors INSERT_BEFORE/AFTER and is what
// REPLACE replaces, and REMOVE removes every matching element. A list the
// caller does not own is never modified: a change returns a new slice.
func listOp[T any](list []T, owned bool, op networking.EnvoyFilter_Patch_Operation, v T, hasMatch bool, match func(T) bool) ([]T, bool) {
	at := -1
	switch op {
	case networking.EnvoyFilter_Patch_ADD:
		at = len(list)
	case networking.EnvoyFilter_Patch_INSERT_FIRST:
		at = 0
	case networking.EnvoyFilter_Patch_INSERT_AFTER:
		if at = len(list); hasMatch {
			if at = slices.IndexFunc(list, match); at >= 0 {
				at++
			}
		}
	case networking.EnvoyFilter_Patch_INSERT_BEFORE:
		if at = 0; hasMatch {
			at = slices.IndexFunc(list, match)
		}
	case networking.EnvoyFilter_Patch_REPLACE:
		if i := slices.IndexFunc(list, match); hasMatch && i >= 0 {
			if !owned {
				list = slices.Clone(list)
			}
			list[i] = v
			return list, true
		}
		return list, false
	case networking.EnvoyFilter_Patch_REMOVE:
		if !hasMatch || !slices.ContainsFunc(list, match) {
			return list, false
		}
		if owned {
			return slices.DeleteFunc(list, match), true
		}
		out := make([]T, 0, len(list))
		for _, e := range list {
			if !match(e) {
				out = append(out, e)
			}
		}
		return out, true
	}
	if at < 0 {
		return list, false
	}
	if owned {
		return slices.Insert(list, at, v), true
	}
	return insertAt(list, at, v), true
}

// insertAt returns a new slice: list with v at i.
func insertAt[T any](list []T, i int, v T) []T {
	out := make([]T, 0, len(list)+1)
	out = append(out, list[:i]...)
	out = append(out, v)
	return append(out, list[i:]...)
}
