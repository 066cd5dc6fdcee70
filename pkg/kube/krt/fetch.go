package krt

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// FetchOption narrows what Fetch returns. Every option must hold for an
// object to be returned, except that key options add up (FilterKey(a),
// FilterKey(b) returns a and b).
type FetchOption func(*fetchFilter)

// fetchFilter is the recorded form of one Fetch: it is kept per input of a
// derived collection and re-evaluated against the objects of later events.
type fetchFilter struct {
	hasKeys    bool
	keys       []string // sorted, unique
	hasNS      bool
	namespace  string
	labels     map[string]string
	hasSelects bool
	selects    map[string]string
	selectorOf func(any) map[string]string
	generic    []func(any) bool
}

// FilterKey keeps the object with this key.
func FilterKey(key string) FetchOption { return FilterKeys(key) }

// FilterKeys keeps the objects with these keys (none when called with none).
func FilterKeys(keys ...string) FetchOption {
	return func(f *fetchFilter) {
		f.hasKeys = true
		for _, k := range keys {
			if i, found := slices.BinarySearch(f.keys, k); !found {
				f.keys = slices.Insert(f.keys, i, k)
			}
		}
	}
}

// FilterNamespace keeps objects of this namespace (see namespaceOf: the
// object's GetNamespace, config.Config's Namespace, or the key's prefix).
func FilterNamespace(ns string) FetchOption {
	return func(f *fetchFilter) { f.hasNS, f.namespace = true, ns }
}

// FilterLabel keeps objects whose labels contain every pair of labels.
func FilterLabel(labels map[string]string) FetchOption {
	return func(f *fetchFilter) { f.labels = labels }
}

// FilterSelects keeps objects whose selector (LabelSelectorer) selects
// labels: every pair of the selector is in labels. An object without a
// selector, or with an empty one, selects nothing.
func FilterSelects(labels map[string]string) FetchOption {
	return FilterSelectsWith(labels, nil)
}

// FilterSelectsWith is FilterSelects with the selector read by selectorOf
// (nil: LabelSelectorer), e.g. func(o any) map[string]string { return
// o.(*corev1.Service).Spec.Selector }.
func FilterSelectsWith(labels map[string]string, selectorOf func(any) map[string]string) FetchOption {
	return func(f *fetchFilter) { f.hasSelects, f.selects, f.selectorOf = true, labels, selectorOf }
}

// FilterGeneric keeps objects for which keep returns true. keep must be pure:
// it is re-run on the objects of later events to decide what to recompute.
func FilterGeneric(keep func(any) bool) FetchOption {
	return func(f *fetchFilter) { f.generic = append(f.generic, keep) }
}

func newFetchFilter(opts []FetchOption) *fetchFilter {
	f := &fetchFilter{}
	for _, o := range opts {
		o(f)
	}
	return f
}

// matchesFilter reports whether o, whose key is key, passes every option.
func matchesFilter[T any](f *fetchFilter, o T, key string) bool {
	if f.hasKeys {
		if _, found := slices.BinarySearch(f.keys, key); !found {
			return false
		}
	}
	if f.hasNS && namespaceOf(o, key) != f.namespace {
		return false
	}
	if len(f.labels) > 0 && !subsetOf(f.labels, labelsOf(o)) {
		return false
	}
	if f.hasSelects {
		var sel map[string]string
		if f.selectorOf != nil {
			sel = f.selectorOf(o)
		} else {
			sel = selectorOf(o)
		}
		if len(sel) == 0 || !subsetOf(sel, f.selects) {
			return false
		}
	}
	for _, keep := range f.generic {
		if !keep(o) {
			return false
		}
	}
	return true
}

// subsetOf reports whether every pair of small is in big.
func subsetOf(small, big map[string]string) bool {
	for k, v := range small {
		if bv, ok := big[k]; !ok || bv != v {
			return false
		}
	}
	return true
}

// String describes the filter for /debug/krtz.
func (f *fetchFilter) String() string {
	var parts []string
	if f.hasKeys {
		parts = append(parts, "key="+strings.Join(f.keys, ","))
	}
	if f.hasNS {
		parts = append(parts, "namespace="+f.namespace)
	}
	if len(f.labels) > 0 {
		parts = append(parts, "labels="+formatLabels(f.labels))
	}
	if f.hasSelects {
		parts = append(parts, "selects="+formatLabels(f.selects))
	}
	if len(f.generic) > 0 {
		parts = append(parts, fmt.Sprintf("generic(%d)", len(f.generic)))
	}
	return strings.Join(parts, " ")
}

func formatLabels(m map[string]string) string {
	keys := slices.Sorted(maps.Keys(m))
	for i, k := range keys {
		keys[i] = k + "=" + m[k]
	}
	return "{" + strings.Join(keys, ",") + "}"
}

// Fetch returns the objects of c that pass the filters, sorted by key. Called
// from a transform with its HandlerContext, it records the dependency: the
// input is recomputed when an object of c that passes the filters (before or
// after the change) changes. With a nil ctx it is a plain read.
func Fetch[T any](ctx HandlerContext, c Collection[T], opts ...FetchOption) []T {
	src := baseOf(c)
	f := newFetchFilter(opts)
	if tc, ok := ctx.(*transformContext); ok && tc != nil {
		// Subscribe before reading, so no change falls between the two.
		dep := trackSource(tc.tracker, src)
		tc.records = append(tc.records, depRecord{dep: dep, filter: f})
	}
	if f.hasKeys {
		out := make([]T, 0, len(f.keys))
		for _, k := range f.keys {
			if v := src.GetKey(k); v != nil && matchesFilter(f, *v, k) {
				out = append(out, *v)
			}
		}
		return out
	}
	all := src.List()
	out := all[:0]
	for _, o := range all {
		if matchesFilter(f, o, src.keyOf(o)) {
			out = append(out, o)
		}
	}
	return out
}

// FetchOne is Fetch returning the first match (lowest key), or nil.
func FetchOne[T any](ctx HandlerContext, c Collection[T], opts ...FetchOption) *T {
	res := Fetch(ctx, c, opts...)
	if len(res) == 0 {
		return nil
	}
	return &res[0]
}
