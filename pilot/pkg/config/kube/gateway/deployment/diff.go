package deployment

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// UpToDate reports whether server-side applying o to live would change
// nothing, so that the write can be skipped:
//   - every field o sets has the same value in live (live may have more:
//     defaults, other managers' fields, status), and
//   - every field live records as applied by FieldManager is still in o
//     (otherwise the apply would remove it).
//
// An object without an apply entry of FieldManager is never up to date.
func UpToDate(o *Object, live runtime.Object) bool { return Difference(o, live) == "" }

// Difference is why applying o to live would change it: the path of the
// first field that differs or would be removed ("" when none).
func Difference(o *Object, live runtime.Object) string {
	m, err := meta.Accessor(live)
	if err != nil {
		return err.Error()
	}
	owned := ownedFields(m.GetManagedFields())
	if owned == nil {
		return "no fields applied by " + FieldManager
	}
	have, err := runtime.DefaultUnstructuredConverter.ToUnstructured(live)
	if err != nil {
		return err.Error()
	}
	// typed clients drop the type of the objects they decode; it is o's
	have["apiVersion"], have["kind"] = o.want["apiVersion"], o.want["kind"]
	if p, ok := subsetPath(o.want, have, ""); !ok {
		return p + " differs"
	}
	if p, ok := stillAppliedPath(owned, o.Raw, ""); !ok {
		return p + " is no longer rendered"
	}
	return ""
}

// ownedFields is the field set FieldManager applied (nil when none).
func ownedFields(entries []metav1.ManagedFieldsEntry) map[string]any {
	for _, e := range entries {
		if e.Manager != FieldManager || e.Operation != metav1.ManagedFieldsOperationApply || e.Subresource != "" || e.FieldsV1 == nil {
			continue
		}
		out := map[string]any{}
		if err := json.Unmarshal(e.FieldsV1.Raw, &out); err != nil {
			return nil
		}
		return out
	}
	return nil
}

// subset reports whether every value want sets is in have. A nil in want
// sets nothing. Lists of scalars are atomic (equal as a whole); in a list of
// objects every element of want must be a subset of one of have's.
func subset(want, have any) bool {
	_, ok := subsetPath(want, have, "")
	return ok
}

// subsetPath is subset, with the path of the first difference.
func subsetPath(want, have any, path string) (string, bool) {
	switch w := want.(type) {
	case nil:
		return "", true
	case map[string]any:
		h, ok := have.(map[string]any)
		if !ok {
			return path, false
		}
		for k, wv := range w {
			if wv == nil {
				continue
			}
			hv, ok := h[k]
			if !ok {
				return path + "." + k, false
			}
			if p, ok := subsetPath(wv, hv, path+"."+k); !ok {
				return p, false
			}
		}
		return "", true
	case []any:
		h, ok := have.([]any)
		if !ok {
			return path, len(w) == 0 && have == nil
		}
		return listSubset(w, h, path)
	}
	return path, scalarEqual(want, have)
}

func listSubset(w, h []any, path string) (string, bool) {
	if !objects(w) {
		if len(w) != len(h) {
			return path, false
		}
		for i := range w {
			if !scalarEqual(w[i], h[i]) {
				return fmt.Sprintf("%s[%d]", path, i), false
			}
		}
		return "", true
	}
next:
	for i, we := range w {
		// the same position first: lists keep their order
		if i < len(h) && subset(we, h[i]) {
			continue
		}
		for _, he := range h {
			if subset(we, he) {
				continue next
			}
		}
		if i < len(h) {
			p, _ := subsetPath(we, h[i], fmt.Sprintf("%s[%d]", path, i))
			return p, false
		}
		return fmt.Sprintf("%s[%d]", path, i), false
	}
	return "", true
}

func objects(l []any) bool {
	for _, e := range l {
		if _, ok := e.(map[string]any); !ok {
			return false
		}
	}
	return len(l) > 0
}

// scalarEqual compares JSON scalars, numbers by value whatever their Go
// type.
func scalarEqual(a, b any) bool {
	fa, oka := number(a)
	fb, okb := number(b)
	if oka || okb {
		return oka && okb && fa == fb
	}
	return a == b
}

func number(v any) (float64, bool) {
	switch n := v.(type) {
	case int64:
		return float64(n), true
	case int32:
		return float64(n), true
	case int:
		return float64(n), true
	case float64:
		return n, true
	case float32:
		return float64(n), true
	case json.Number:
		f, err := n.Float64()
		return f, err == nil
	}
	return 0, false
}

// stillApplied walks a managed field set (FieldsV1: "f:<field>",
// "k:<key object>", "v:<value>", "i:<index>", ".") and reports whether
// every field in it is in obj.
func stillApplied(fields map[string]any, obj any) bool {
	_, ok := stillAppliedPath(fields, obj, "")
	return ok
}

// stillAppliedPath is stillApplied, with the first field no longer in obj.
func stillAppliedPath(fields map[string]any, obj any, path string) (string, bool) {
	for pe, sub := range fields {
		if pe == "." {
			continue
		}
		child, ok := pathElement(pe, obj)
		if !ok {
			return path + "." + pe, false
		}
		if m, ok := sub.(map[string]any); ok && len(m) > 0 {
			if p, ok := stillAppliedPath(m, child, path+"."+pe); !ok {
				return p, false
			}
		}
	}
	return "", true
}

// pathElement resolves one FieldsV1 path element in obj.
func pathElement(pe string, obj any) (any, bool) {
	switch {
	case strings.HasPrefix(pe, "f:"):
		m, ok := obj.(map[string]any)
		if !ok {
			return nil, false
		}
		v, ok := m[pe[2:]]
		return v, ok
	case strings.HasPrefix(pe, "k:"):
		key := map[string]any{}
		l, ok := obj.([]any)
		if !ok || json.Unmarshal([]byte(pe[2:]), &key) != nil {
			return nil, false
		}
		for _, e := range l {
			if em, ok := e.(map[string]any); ok && keyMatches(key, em) {
				return e, true
			}
		}
	case strings.HasPrefix(pe, "v:"):
		var want any
		l, ok := obj.([]any)
		if !ok || json.Unmarshal([]byte(pe[2:]), &want) != nil {
			return nil, false
		}
		for _, e := range l {
			if scalarEqual(want, e) {
				return e, true
			}
		}
	case strings.HasPrefix(pe, "i:"):
		i, err := strconv.Atoi(pe[2:])
		l, ok := obj.([]any)
		if err == nil && ok && i >= 0 && i < len(l) {
			return l[i], true
		}
	}
	return nil, false
}

// keyMatches: every key field the element sets has the key's value (a key
// field the element leaves out is one the server defaulted).
func keyMatches(key, elem map[string]any) bool {
	for k, v := range key {
		if ev, ok := elem[k]; ok && !scalarEqual(v, ev) {
			return false
		}
	}
	return true
}
