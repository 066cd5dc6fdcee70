package gateway

import (
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// condition is one condition to report: its success state, replaced by err
// (with the status inverted) when set.
type condition struct {
	reason  string
	message string
	// status is the success status; "" means True.
	status metav1.ConditionStatus
	err    *ConfigError
}

func invert(s metav1.ConditionStatus) metav1.ConditionStatus {
	if s == metav1.ConditionFalse {
		return metav1.ConditionTrue
	}
	return metav1.ConditionFalse
}

// setConditions merges conds (by type, in type order) into existing as Istio
// does: a condition of unchanged status, message and generation is kept as
// it is; one whose status is unchanged keeps its lastTransitionTime; any
// other is new and gets a zero lastTransitionTime, stamped by the writer.
// existing is not modified.
func setConditions(generation int64, existing []metav1.Condition, conds map[string]*condition) []metav1.Condition {
	out := slices.Clone(existing)
	types := make([]string, 0, len(conds))
	for t := range conds {
		types = append(types, t)
	}
	slices.Sort(types)
	for _, t := range types {
		c := conds[t]
		next := metav1.Condition{Type: t, ObservedGeneration: generation}
		if c.err != nil {
			next.Status, next.Reason, next.Message = invert(c.status), c.err.Reason, c.err.Message
		} else {
			next.Status, next.Reason, next.Message = c.status, c.reason, c.message
			if next.Status == "" {
				next.Status = metav1.ConditionTrue
			}
		}
		out = updateCondition(out, next)
	}
	return out
}

// updateCondition sets one condition in conds (a slice the caller owns).
func updateCondition(conds []metav1.Condition, next metav1.Condition) []metav1.Condition {
	i := slices.IndexFunc(conds, func(c metav1.Condition) bool { return c.Type == next.Type })
	if i < 0 {
		return append(conds, next)
	}
	cur := conds[i]
	if cur.Status == next.Status {
		if cur.Message == next.Message && cur.ObservedGeneration == next.ObservedGeneration {
			return conds
		}
		next.LastTransitionTime = cur.LastTransitionTime
	}
	conds[i] = next
	return conds
}
