package envoyfilter

import (
	"errors"
	"fmt"
	"slices"

	networking "istio.io/api/networking/v1alpha3"

	"github.com/meshplane/istiod/pkg/diag"
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

// mergeFilterConfig merges the typed config of a filter MERGE into dst
// (a filter's typed_config) and validates the result. It returns the new
// Any, or dst when Istio keeps the target's config (it cannot be decoded);
// ok is false when the patch must not apply (reported).
func (s *session) mergeFilterConfig(p *patch, resource string, dst anyMessage) (out anyMessage, ok bool) {
	merged, m, err := mergeTyped(dst, p.merged)
	switch {
	case errors.Is(err, errMismatch):
		s.drop(p, resource, "its typed_config (%s) is not of the type of the filter's (%s); Istio's istiod fails on this "+
			"merge and sends none of its patches for the resource type", p.merged.ProtoReflect().Descriptor().FullName(), dst.GetTypeUrl())
		return nil, false
	case err != nil:
		// Istio keeps the config it cannot decode (and applies the name).
		s.warn(p, resource, "typed_config not merged: %v", err)
		return dst, true
	}
	if err := validateShallow(m); err != nil {
		s.drop(p, resource, "the merged typed_config is not a valid %s: %v", m.ProtoReflect().Descriptor().FullName(), err)
		return nil, false
	}
	return merged, true
}

// mergeWhole merges a MERGE value into a copy of target and validates the
// result; ok is false (reported) when the result is not valid.
func mergeWhole[T validatedMessage](s *session, p *patch, resource string, target T) (T, bool) {
	next := clone(target)
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
// REPLACE replaces, and REMOVE removes every matching element. The input
// list is never modified: a change returns a new slice.
func listOp[T any](list []T, op networking.EnvoyFilter_Patch_Operation, v T, hasMatch bool, match func(T) bool) ([]T, bool) {
	switch op {
	case networking.EnvoyFilter_Patch_ADD:
		return insertAt(list, len(list), v), true
	case networking.EnvoyFilter_Patch_INSERT_FIRST:
		return insertAt(list, 0, v), true
	case networking.EnvoyFilter_Patch_INSERT_AFTER:
		if !hasMatch {
			return insertAt(list, len(list), v), true
		}
		if i := slices.IndexFunc(list, match); i >= 0 {
			return insertAt(list, i+1, v), true
		}
	case networking.EnvoyFilter_Patch_INSERT_BEFORE:
		if !hasMatch {
			return insertAt(list, 0, v), true
		}
		if i := slices.IndexFunc(list, match); i >= 0 {
			return insertAt(list, i, v), true
		}
	case networking.EnvoyFilter_Patch_REPLACE:
		if i := slices.IndexFunc(list, match); hasMatch && i >= 0 {
			out := slices.Clone(list)
			out[i] = v
			return out, true
		}
	case networking.EnvoyFilter_Patch_REMOVE:
		if hasMatch && slices.ContainsFunc(list, match) {
			out := make([]T, 0, len(list))
			for _, e := range list {
				if !match(e) {
					out = append(out, e)
				}
			}
			return out, true
		}
	}
	return list, false
}

// insertAt returns a new slice: list with v at i.
func insertAt[T any](list []T, i int, v T) []T {
	out := make([]T, 0, len(list)+1)
	out = append(out, list[:i]...)
	out = append(out, v)
	return append(out, list[i:]...)
}
