package envoyfilter

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"regexp"
	"time"

	"google.golang.org/protobuf/proto"
	networking "istio.io/api/networking/v1alpha3"
	typev1beta1 "istio.io/api/type/v1beta1"

	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/diag"
)

// Filter is one EnvoyFilter converted into patches. It depends on the
// object only, never on a proxy, and is read-only once compiled.
type Filter struct {
	Namespace string
	Name      string
	Priority  int32
	Created   time.Time

	selector   map[string]string
	targetRefs []*typev1beta1.PolicyTargetReference
	patches    []*patch
	problems   []Problem
	// fingerprint identifies the object's identity and spec.
	fingerprint [16]byte
}

// Problems are what converting the filter found: patches left out (their
// value does not decode, or a complete value is not valid) and warnings
// (unknown fields, dropped as Istio drops them). The slice is shared.
func (f *Filter) Problems() []Problem { return f.problems }

// patch is one config patch, converted.
type patch struct {
	filter  *Filter
	index   int // in spec.configPatches
	applyTo networking.EnvoyFilter_ApplyTo
	// op is the operation as Istio applies it: INSERT_* outside filters
	// and routes is ADD.
	op    networking.EnvoyFilter_Patch_Operation
	match *networking.EnvoyFilter_EnvoyConfigObjectMatch // never nil
	// value is the patch value as the Envoy type of applyTo (nil for
	// REMOVE). It is shared by every proxy: never modified.
	value proto.Message
	// merged is the decoded typed_config a MERGE merges into the target's
	// (the filter's, or the transport socket's), nil when there is none.
	merged proto.Message
	// The filter parts of a listener match, read once: the network filter
	// (hasFilter: a filter match is present, its name compared as is) and
	// the HTTP filter (sub filter) it names.
	hasFilter, hasSubFilter   bool
	filterName, subFilterName string
	// version is the compiled proxyVersion regex (nil: no version match);
	// noVersion marks a version match Istio refuses to compile (too long),
	// which matches no proxy.
	version   *regexp.Regexp
	noVersion bool
}

// maxProxyVersionLen is the longest proxyVersion regex Istio compiles; a
// longer one matches no proxy.
const maxProxyVersionLen = 1024

// Compile converts an EnvoyFilter. A config whose spec is not an
// EnvoyFilter yields a Filter without patches.
func Compile(cfg config.Config) *Filter {
	f := &Filter{Namespace: cfg.Namespace, Name: cfg.Name, Created: cfg.CreationTimestamp}
	spec, _ := cfg.Spec.(*networking.EnvoyFilter)
	f.fingerprint = fingerprint(cfg, spec)
	if spec == nil {
		return f
	}
	f.Priority = spec.GetPriority()
	if ws := spec.GetWorkloadSelector(); ws != nil {
		f.selector = ws.GetLabels()
		if f.selector == nil {
			f.selector = map[string]string{}
		}
	}
	f.targetRefs = spec.GetTargetRefs()
	for i, cp := range spec.GetConfigPatches() {
		if p := f.compilePatch(i, cp); p != nil {
			f.patches = append(f.patches, p)
		}
	}
	return f
}

func (f *Filter) problem(sev diag.Severity, index int, format string, args ...any) {
	f.problems = append(f.problems, Problem{Severity: sev, Namespace: f.Namespace, Name: f.Name, Patch: index,
		Message: fmt.Sprintf(format, args...)})
}

// compilePatch converts one config patch, or returns nil for a patch Istio
// skips or that does nothing.
func (f *Filter) compilePatch(i int, cp *networking.EnvoyFilter_EnvoyConfigObjectPatch) *patch {
	if cp == nil || cp.GetPatch() == nil {
		// Istio skips a patch without patch (validation rejects it).
		return nil
	}
	p := &patch{filter: f, index: i, applyTo: cp.GetApplyTo(), op: cp.GetPatch().GetOperation(), match: cp.GetMatch()}
	if p.match == nil {
		p.match = &networking.EnvoyFilter_EnvoyConfigObjectMatch{Context: networking.EnvoyFilter_ANY}
	}
	if fm := p.match.GetListener().GetFilterChain().GetFilter(); fm != nil {
		p.hasFilter, p.filterName = true, fm.GetName()
		if sub := fm.GetSubFilter(); sub != nil {
			p.hasSubFilter, p.subFilterName = true, sub.GetName()
		}
	}
	value, strictErr, err := decodeValue(p.applyTo, cp.GetPatch().GetValue())
	if err != nil {
		f.problem(diag.Error, i, "%v; the patch is not applied", err)
		return nil
	}
	if strictErr != nil {
		// Istio's validation warns; istiod drops the unknown fields.
		f.problem(diag.Warning, i, "Envoy filter: %v (the unknown fields are ignored)", strictErr)
	}
	p.value = value
	if pv := p.match.GetProxy().GetProxyVersion(); pv != "" {
		if len(pv) > maxProxyVersionLen {
			p.noVersion = true
		} else if re, err := regexp.Compile(pv); err == nil {
			p.version = re
		}
		// Istio ignores a regex that does not compile (validation rejects
		// it): the version then matches every proxy.
	}
	p.op = effectiveOperation(p.applyTo, p.op)
	if !applies(p.applyTo, p.op) {
		return nil
	}
	if err := p.prepare(); err != nil {
		f.problem(diag.Error, i, "%v; the patch is not applied", err)
		return nil
	}
	return p
}

// effectiveOperation is the operation as Istio applies it: INSERT_BEFORE,
// INSERT_AFTER and INSERT_FIRST order filters and routes only, and are ADD
// for every other applyTo.
func effectiveOperation(applyTo networking.EnvoyFilter_ApplyTo, op networking.EnvoyFilter_Patch_Operation) networking.EnvoyFilter_Patch_Operation {
	switch op {
	case networking.EnvoyFilter_Patch_INSERT_BEFORE, networking.EnvoyFilter_Patch_INSERT_AFTER, networking.EnvoyFilter_Patch_INSERT_FIRST:
		switch applyTo {
		case networking.EnvoyFilter_HTTP_FILTER, networking.EnvoyFilter_NETWORK_FILTER,
			networking.EnvoyFilter_HTTP_ROUTE, networking.EnvoyFilter_LISTENER_FILTER:
			return op
		}
		return networking.EnvoyFilter_Patch_ADD
	}
	return op
}

// isMerge reports whether op merges the value into the target (MERGE_AND_
// REPLACE_LIST replaces lists instead of appending to them).
func isMerge(op networking.EnvoyFilter_Patch_Operation) bool {
	return op == networking.EnvoyFilter_Patch_MERGE || op == networking.EnvoyFilter_Patch_MERGE_AND_REPLACE_LIST
}

// applies reports whether Istio 1.31's istiod does anything for the
// operation on applyTo. The others are no-ops (the analyzer reports some
// of them: IST0152, IST0153, IST0154).
func applies(applyTo networking.EnvoyFilter_ApplyTo, op networking.EnvoyFilter_Patch_Operation) bool {
	const (
		add     = networking.EnvoyFilter_Patch_ADD
		remove  = networking.EnvoyFilter_Patch_REMOVE
		merge   = networking.EnvoyFilter_Patch_MERGE
		replace = networking.EnvoyFilter_Patch_REPLACE
	)
	insert := op == networking.EnvoyFilter_Patch_INSERT_BEFORE || op == networking.EnvoyFilter_Patch_INSERT_AFTER ||
		op == networking.EnvoyFilter_Patch_INSERT_FIRST
	switch applyTo {
	case networking.EnvoyFilter_LISTENER, networking.EnvoyFilter_FILTER_CHAIN, networking.EnvoyFilter_CLUSTER:
		return op == add || op == remove || isMerge(op)
	case networking.EnvoyFilter_LISTENER_FILTER, networking.EnvoyFilter_NETWORK_FILTER, networking.EnvoyFilter_HTTP_FILTER:
		// filters merge with MERGE only: MERGE_AND_REPLACE_LIST does nothing
		return op == add || op == remove || op == merge || op == replace || insert
	case networking.EnvoyFilter_ROUTE_CONFIGURATION:
		return isMerge(op)
	case networking.EnvoyFilter_VIRTUAL_HOST:
		return op == add || op == remove || op == replace || isMerge(op)
	case networking.EnvoyFilter_HTTP_ROUTE:
		return op == add || op == remove || insert || isMerge(op)
	case networking.EnvoyFilter_EXTENSION_CONFIG:
		return op == add
	}
	// BOOTSTRAP: istiod serves no bootstrap. Unknown applyTo: nothing.
	return false
}

// fingerprint identifies a filter's identity, order keys and spec.
func fingerprint(cfg config.Config, spec *networking.EnvoyFilter) [16]byte {
	h := sha256.New()
	h.Write([]byte(cfg.Namespace + "/" + cfg.Name + "\x00"))
	var ts [8]byte
	binary.BigEndian.PutUint64(ts[:], uint64(cfg.CreationTimestamp.UnixNano()))
	h.Write(ts[:])
	if spec != nil {
		b, _ := proto.MarshalOptions{Deterministic: true}.Marshal(spec)
		h.Write(b)
	}
	var out [16]byte
	copy(out[:], h.Sum(nil))
	return out
}
