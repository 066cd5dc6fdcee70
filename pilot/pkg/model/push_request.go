package model

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/meshplane/istiod/pkg/config/schema/kind"
)

// ConfigKey identifies one changed object in a push request. Kind is the
// generated kind enum, not a GVK. kind.Service never appears here: service
// changes travel as SvcUpdate/EDSUpdate.
type ConfigKey struct {
	Kind      kind.Kind
	Name      string
	Namespace string
}

func (k ConfigKey) String() string {
	return k.Kind.String() + "/" + k.Namespace + "/" + k.Name
}

// TriggerReason says why a push happened.
type TriggerReason string

// Trigger reasons, with Istio's names (they label pilot_push_triggers).
const (
	EndpointUpdate  TriggerReason = "endpoint"
	ConfigUpdate    TriggerReason = "config"
	ServiceUpdate   TriggerReason = "service"
	ProxyUpdate     TriggerReason = "proxy"
	GlobalUpdate    TriggerReason = "global"
	UnknownTrigger  TriggerReason = "unknown"
	DebugTrigger    TriggerReason = "debug"
	SecretTrigger   TriggerReason = "secret"
	NetworksTrigger TriggerReason = "networks"
	ProxyRequest    TriggerReason = "proxyrequest"
	NamespaceUpdate TriggerReason = "namespace"
	ClusterUpdate   TriggerReason = "cluster"
)

// ReasonStats counts triggers by reason.
type ReasonStats map[TriggerReason]int

// NewReasonStats counts one occurrence of each reason.
func NewReasonStats(reasons ...TriggerReason) ReasonStats {
	r := ReasonStats{}
	for _, x := range reasons {
		r[x]++
	}
	return r
}

// Merge adds other's counts.
func (r ReasonStats) Merge(other ReasonStats) ReasonStats {
	out := make(ReasonStats, len(r)+len(other))
	for k, v := range r {
		out[k] += v
	}
	for k, v := range other {
		out[k] += v
	}
	return out
}

// Count returns the total.
func (r ReasonStats) Count() int {
	n := 0
	for _, v := range r {
		n += v
	}
	return n
}

// Has reports whether reason occurred.
func (r ReasonStats) Has(reason TriggerReason) bool { return r[reason] > 0 }

func (r ReasonStats) String() string {
	keys := make([]string, 0, len(r))
	for k := range r {
		keys = append(keys, string(k))
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s:%d", k, r[TriggerReason(k)]))
	}
	return strings.Join(parts, ",")
}

// PushRequest asks for a push.
type PushRequest struct {
	// Full: regenerate every type; otherwise only EDS for ConfigsUpdated.
	Full bool
	// Forced: push to every proxy regardless of scoping, with a full
	// PushContext rebuild.
	Forced bool
	// ConfigsUpdated lists the changed objects. Empty on a full push means
	// "everything may have changed".
	ConfigsUpdated map[ConfigKey]struct{}
	// Reason counts the triggers merged into this request.
	Reason ReasonStats
	// Push is the snapshot the push is computed from (set by the push engine).
	Push *PushContext
	// Start is when the first merged trigger happened.
	Start time.Time
}

// Merge combines two requests into a new one: reasons summed, Full and
// Forced OR'd, ConfigsUpdated unioned (a full request with an empty set means
// everything, which wins), the newer PushContext kept, the earlier start kept.
// Either side may be nil.
func (pr *PushRequest) Merge(other *PushRequest) *PushRequest {
	if pr == nil {
		return other
	}
	if other == nil {
		return pr
	}
	out := &PushRequest{
		Full:   pr.Full || other.Full,
		Forced: pr.Forced || other.Forced,
		Reason: pr.Reason.Merge(other.Reason),
		Push:   other.Push,
		Start:  pr.Start,
	}
	if out.Push == nil {
		out.Push = pr.Push
	}
	if out.Start.IsZero() || (!other.Start.IsZero() && other.Start.Before(out.Start)) {
		out.Start = other.Start
	}
	// a full request that names nothing means "everything"
	everything := (pr.Full && len(pr.ConfigsUpdated) == 0) || (other.Full && len(other.ConfigsUpdated) == 0)
	if !everything {
		out.ConfigsUpdated = make(map[ConfigKey]struct{}, len(pr.ConfigsUpdated)+len(other.ConfigsUpdated))
		for k := range pr.ConfigsUpdated {
			out.ConfigsUpdated[k] = struct{}{}
		}
		for k := range other.ConfigsUpdated {
			out.ConfigsUpdated[k] = struct{}{}
		}
	}
	return out
}

// IsEverything reports whether the request covers every object.
func (pr *PushRequest) IsEverything() bool { return pr.Full && len(pr.ConfigsUpdated) == 0 }

// HasConfigsOfKind reports whether any changed key has kind k.
func HasConfigsOfKind(cfgs map[ConfigKey]struct{}, k kind.Kind) bool {
	for c := range cfgs {
		if c.Kind == k {
			return true
		}
	}
	return false
}

// ConfigsOfKind returns the changed keys of kind k.
func ConfigsOfKind(cfgs map[ConfigKey]struct{}, k kind.Kind) []ConfigKey {
	var out []ConfigKey
	for c := range cfgs {
		if c.Kind == k {
			out = append(out, c)
		}
	}
	return out
}
