package model

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/meshplane/istiod/pkg/clock"
	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/config/schema/gvk"
	"github.com/meshplane/istiod/pkg/config/schema/kind"
	"github.com/meshplane/istiod/pkg/log"
	"github.com/meshplane/istiod/pkg/ring"
)

var pushLog = log.RegisterScope("push", "push decisions: NeedsPush, debounce, push queue")

// AlwaysPushLabel, as a label or an annotation on either version of an
// object, makes every update of that object push, whatever changed.
const AlwaysPushLabel = "internal.istio.io/always-push"

// PushRule names the NeedsPush rule that decided an update.
type PushRule string

// The rules of NeedsPush, in the order they are tried.
const (
	// RuleKindChanged: the two versions have different GVKs → push.
	RuleKindChanged PushRule = "kind-changed"
	// RuleNonIstioGroup: the group does not end in istio.io (Gateway API,
	// Kubernetes kinds) → push; those objects carry meaning outside spec.
	RuleNonIstioGroup PushRule = "non-istio-group"
	// RuleAlwaysPush: AlwaysPushLabel is set → push.
	RuleAlwaysPush PushRule = "always-push"
	// RuleIstioMetadata: a label or annotation whose key contains istio.io
	// was added, removed or changed → push.
	RuleIstioMetadata PushRule = "istio-metadata-changed"
	// RuleSpecChanged: the proto specs differ → push.
	RuleSpecChanged PushRule = "spec-changed"
	// RuleSpecNotProto: a spec is not a proto message and cannot be
	// compared → push.
	RuleSpecNotProto PushRule = "spec-not-proto"
	// RuleSpecUnchanged: equal specs and no istio.io metadata change →
	// suppressed.
	RuleSpecUnchanged PushRule = "spec-unchanged"
)

// Rules of the config event handler that are not NeedsPush rules; they
// suppress too.
const (
	// RuleServiceKind: a config event for kind.Service; services reach the
	// push engine through the service registries, never as config keys.
	RuleServiceKind PushRule = "service-kind"
	// RuleUnknownKind: the GVK is not in the kind table.
	RuleUnknownKind PushRule = "unknown-kind"
)

// PushDecision is NeedsPush's answer with its reason.
type PushDecision struct {
	Push bool
	Rule PushRule
	// Detail says what differed (or, when suppressed, which metadata
	// changed without mattering).
	Detail string
}

// NeedsPush reports whether an update from prev to curr can change what
// proxies receive. Updates that only touch metadata outside istio.io (Helm,
// Argo CD, kubectl last-applied annotations, resource versions) do not.
func NeedsPush(prev, curr config.Config) bool { return DecideNeedsPush(prev, curr).Push }

// DecideNeedsPush is NeedsPush with the rule that decided.
func DecideNeedsPush(prev, curr config.Config) PushDecision {
	if prev.GroupVersionKind != curr.GroupVersionKind {
		return PushDecision{Push: true, Rule: RuleKindChanged,
			Detail: prev.GroupVersionKind.String() + " -> " + curr.GroupVersionKind.String()}
	}
	if !strings.HasSuffix(prev.GroupVersionKind.Group, "istio.io") {
		return PushDecision{Push: true, Rule: RuleNonIstioGroup, Detail: "group " + prev.GroupVersionKind.Group}
	}
	if alwaysPush(prev.Meta) || alwaysPush(curr.Meta) {
		return PushDecision{Push: true, Rule: RuleAlwaysPush}
	}
	if k := changedKeys("labels", prev.Labels, curr.Labels, true); len(k) > 0 {
		return PushDecision{Push: true, Rule: RuleIstioMetadata, Detail: strings.Join(k, ", ")}
	}
	if k := changedKeys("annotations", prev.Annotations, curr.Annotations, true); len(k) > 0 {
		return PushDecision{Push: true, Rule: RuleIstioMetadata, Detail: strings.Join(k, ", ")}
	}
	prevSpec, okPrev := prev.Spec.(proto.Message)
	currSpec, okCurr := curr.Spec.(proto.Message)
	if !okPrev || !okCurr {
		return PushDecision{Push: true, Rule: RuleSpecNotProto, Detail: fmt.Sprintf("%T -> %T", prev.Spec, curr.Spec)}
	}
	if !proto.Equal(prevSpec, currSpec) {
		return PushDecision{Push: true, Rule: RuleSpecChanged}
	}
	return PushDecision{Rule: RuleSpecUnchanged, Detail: ignoredChanges(prev, curr)}
}

func alwaysPush(m config.Meta) bool {
	if _, ok := m.Labels[AlwaysPushLabel]; ok {
		return true
	}
	_, ok := m.Annotations[AlwaysPushLabel]
	return ok
}

// changedKeys lists, sorted, the keys added, removed or changed between two
// maps, keeping those whose key contains istio.io (istio true) or those
// whose key does not (istio false). Each entry reads where[key].
func changedKeys(where string, prev, curr map[string]string, istio bool) []string {
	var out []string
	keep := func(k string) bool { return strings.Contains(k, "istio.io") == istio }
	for k, v := range curr {
		if pv, ok := prev[k]; keep(k) && (!ok || pv != v) {
			out = append(out, where+"["+k+"]")
		}
	}
	for k := range prev {
		if _, ok := curr[k]; keep(k) && !ok {
			out = append(out, where+"["+k+"]")
		}
	}
	sort.Strings(out)
	return out
}

// ignoredChanges describes what changed without mattering to NeedsPush.
func ignoredChanges(prev, curr config.Config) string {
	keys := append(changedKeys("labels", prev.Labels, curr.Labels, false),
		changedKeys("annotations", prev.Annotations, curr.Annotations, false)...)
	if len(keys) == 0 {
		return "nothing that proxies see changed (resync or status/metadata-only update)"
	}
	const shown = 5
	more := ""
	if len(keys) > shown {
		more = fmt.Sprintf(" (+%d more)", len(keys)-shown)
		keys = keys[:shown]
	}
	return "only metadata outside istio.io changed: " + strings.Join(keys, ", ") + more
}

// SuppressedUpdate is one config update that did not cause a push.
type SuppressedUpdate struct {
	Time      time.Time `json:"time"`
	Kind      string    `json:"kind"`
	Namespace string    `json:"namespace,omitempty"`
	Name      string    `json:"name"`
	// ResourceVersion is the new version of the object.
	ResourceVersion string   `json:"resourceVersion,omitempty"`
	Rule            PushRule `json:"rule"`
	Detail          string   `json:"detail,omitempty"`
}

// DefaultSuppressedHistory is how many suppressed updates are remembered.
const DefaultSuppressedHistory = 100

// SuppressedUpdates remembers the last suppressed updates in a ring and
// counts all of them. It is safe for concurrent use.
type SuppressedUpdates struct {
	mu    sync.Mutex
	ring  *ring.Ring[SuppressedUpdate]
	total int64
}

// NewSuppressedUpdates keeps the last size updates (DefaultSuppressedHistory
// when size <= 0).
func NewSuppressedUpdates(size int) *SuppressedUpdates {
	if size <= 0 {
		size = DefaultSuppressedHistory
	}
	return &SuppressedUpdates{ring: ring.New[SuppressedUpdate](size)}
}

// Record remembers u, evicting the oldest entry when the ring is full.
func (s *SuppressedUpdates) Record(u SuppressedUpdate) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ring.Add(u)
	s.total++
}

// List returns the remembered updates, newest first; the slice is the
// caller's.
func (s *SuppressedUpdates) List() []SuppressedUpdate {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ring.List()
}

// Total counts every suppressed update since start, remembered or not.
func (s *SuppressedUpdates) Total() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.total
}

// ConfigPushHandler turns config store events into push requests. Updates go
// through NeedsPush first; the ones it suppresses are remembered. Adds and
// deletes always push. Every request is Full, names the one object changed
// and carries the reason "config".
type ConfigPushHandler struct {
	push       func(*PushRequest)
	suppressed *SuppressedUpdates
	clock      clock.Clock
}

// NewConfigPushHandler sends requests to push (the XDSUpdater's
// ConfigUpdate) and remembers suppressed updates in suppressed (may be nil).
func NewConfigPushHandler(push func(*PushRequest), suppressed *SuppressedUpdates, clk clock.Clock) *ConfigPushHandler {
	if clk == nil {
		clk = clock.Real()
	}
	return &ConfigPushHandler{push: push, suppressed: suppressed, clock: clk}
}

var _ EventHandler = (&ConfigPushHandler{}).Handle

// Handle is an EventHandler: for adds old is zero, for deletes cur holds the
// deleted object.
func (h *ConfigPushHandler) Handle(old, cur config.Config, event Event) {
	if event == EventUpdate {
		if d := DecideNeedsPush(old, cur); !d.Push {
			h.suppress(cur, d.Rule, d.Detail)
			return
		}
	}
	k, ok := gvk.ToKind(cur.GroupVersionKind)
	switch {
	case !ok:
		pushLog.Warnf("config event %s for %s/%s of unknown kind %s ignored", event, cur.Namespace, cur.Name, cur.GroupVersionKind)
		h.suppress(cur, RuleUnknownKind, cur.GroupVersionKind.String())
		return
	case k == kind.Service:
		pushLog.Warnf("config event %s for Service %s/%s ignored: services reach the push engine through the registries", event, cur.Namespace, cur.Name)
		h.suppress(cur, RuleServiceKind, "services are pushed by the service registries")
		return
	}
	h.push(&PushRequest{
		Full:           true,
		ConfigsUpdated: NewConfigKeys(ConfigKey{Kind: k, Name: cur.Name, Namespace: cur.Namespace}),
		Reason:         NewReasonStats(ConfigUpdate),
		Start:          h.clock.Now(),
	})
}

func (h *ConfigPushHandler) suppress(cur config.Config, rule PushRule, detail string) {
	pushLog.Debugf("update of %s %s/%s suppressed by %s: %s", cur.GroupVersionKind.Kind, cur.Namespace, cur.Name, rule, detail)
	if h.suppressed == nil {
		return
	}
	h.suppressed.Record(SuppressedUpdate{
		Time:            h.clock.Now(),
		Kind:            cur.GroupVersionKind.Kind,
		Namespace:       cur.Namespace,
		Name:            cur.Name,
		ResourceVersion: cur.ResourceVersion,
		Rule:            rule,
		Detail:          detail,
	})
}
