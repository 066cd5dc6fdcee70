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
// changes travel as SvcUpdate/EDSUpdate and are keyed as kind.ServiceEntry.
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

// Trigger reasons, with Istio's names (they label pilot_push_triggers, so
// the spelling, typo included, is part of the compatibility surface).
const (
	EndpointUpdate         TriggerReason = "endpoint"
	HeadlessEndpointUpdate TriggerReason = "headlessendpoint"
	ConfigUpdate           TriggerReason = "config"
	ServiceUpdate          TriggerReason = "service"
	ProxyUpdate            TriggerReason = "proxy"
	GlobalUpdate           TriggerReason = "global"
	AmbientUpdate          TriggerReason = "ambient"
	UnknownTrigger         TriggerReason = "unknown"
	DebugTrigger           TriggerReason = "debug"
	SecretTrigger          TriggerReason = "secret"
	NetworksTrigger        TriggerReason = "networks"
	ProxyRequest           TriggerReason = "proxyrequest"
	DependentResource      TriggerReason = "depdendentresource"
	NamespaceUpdate        TriggerReason = "namespace"
	ClusterUpdate          TriggerReason = "cluster"
	TagUpdate              TriggerReason = "tag"
)

// ReasonStats counts triggers by reason. Counts are never deduplicated: two
// merged config updates count 2.
type ReasonStats map[TriggerReason]int

// NewReasonStats counts one occurrence of each reason.
func NewReasonStats(reasons ...TriggerReason) ReasonStats {
	r := make(ReasonStats, len(reasons))
	for _, x := range reasons {
		r[x]++
	}
	return r
}

// Add counts one more occurrence of reason; r must not be nil.
func (r ReasonStats) Add(reason TriggerReason) { r[reason]++ }

// Merge returns a new ReasonStats with the counts of r and other summed;
// neither input is modified.
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

// String renders the counts sorted by reason: "config:2,endpoint:1".
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

// ResourceDelta is the change a delta xDS client made to the set of
// resources it subscribes to. It is set only on requests that come from a
// client, never on config-triggered pushes.
type ResourceDelta struct {
	// Subscribed names resources the client now wants.
	Subscribed map[string]struct{}
	// Unsubscribed names resources the client no longer wants.
	Unsubscribed map[string]struct{}
}

// IsEmpty reports whether the delta changes nothing.
func (d ResourceDelta) IsEmpty() bool { return len(d.Subscribed) == 0 && len(d.Unsubscribed) == 0 }

// PushRequest asks for a push. It travels from the event sources to the
// debouncer, from the debouncer to the push computation, and from there into
// every connection's push queue, where the same request is shared by many
// connections: once handed over, a request is read-only. Merge never
// modifies its inputs; MergeInPlace modifies only its receiver, which the
// caller must own (a Copy).
type PushRequest struct {
	// Full: regenerate every type; otherwise only EDS for ConfigsUpdated.
	Full bool
	// Forced: push to every proxy regardless of scoping, with a full
	// PushContext rebuild.
	Forced bool
	// ConfigsUpdated lists the changed objects. On a full push, empty means
	// "everything may have changed" and every proxy is concerned. It never
	// holds kind.Service keys (see Validate).
	ConfigsUpdated map[ConfigKey]struct{}
	// Reason counts the triggers merged into this request.
	Reason ReasonStats
	// Push is the snapshot the push is computed from (set by the push engine;
	// nil while the request is being debounced).
	Push *PushContext
	// Start is when the first merged trigger happened.
	Start time.Time
	// Delta is the subscription change of a client request.
	Delta ResourceDelta
}

// NewConfigKeys builds a ConfigsUpdated set.
func NewConfigKeys(keys ...ConfigKey) map[ConfigKey]struct{} {
	out := make(map[ConfigKey]struct{}, len(keys))
	for _, k := range keys {
		out[k] = struct{}{}
	}
	return out
}

// Copy returns a request that shares no set or map with pr (the PushContext
// pointer is shared: it is immutable). A nil request copies to nil.
func (pr *PushRequest) Copy() *PushRequest {
	if pr == nil {
		return nil
	}
	out := *pr
	out.Reason = pr.Reason.Merge(nil)
	out.ConfigsUpdated = copyKeys(pr.ConfigsUpdated, 0)
	out.Delta = ResourceDelta{
		Subscribed:   copyNames(pr.Delta.Subscribed),
		Unsubscribed: copyNames(pr.Delta.Unsubscribed),
	}
	return &out
}

// Merge combines two requests into a new one: reasons summed, Full and
// Forced OR'd, ConfigsUpdated unioned (a full request with an empty set means
// everything, which wins), the newer (other's) PushContext kept when set, the
// earlier start kept, subscription deltas applied in order. Neither input is
// modified; when one side is nil the other is returned as is.
func (pr *PushRequest) Merge(other *PushRequest) *PushRequest {
	if pr == nil {
		return other
	}
	if other == nil {
		return pr
	}
	everything := pr.IsEverything() || other.IsEverything()
	out := *pr
	out.Reason = pr.Reason.Merge(other.Reason)
	out.ConfigsUpdated = nil
	if !everything {
		out.ConfigsUpdated = copyKeys(pr.ConfigsUpdated, len(other.ConfigsUpdated))
	}
	out.Delta = ResourceDelta{
		Subscribed:   copyNames(pr.Delta.Subscribed),
		Unsubscribed: copyNames(pr.Delta.Unsubscribed),
	}
	out.mergeFields(other, everything)
	return &out
}

// MergeInPlace merges other into pr with the rules of Merge. pr must be
// owned by the caller (typically a Copy); other is not modified. This is the
// cheap path for an accumulator that absorbs many requests.
func (pr *PushRequest) MergeInPlace(other *PushRequest) {
	if other == nil {
		return
	}
	everything := pr.IsEverything() || other.IsEverything()
	if pr.Reason == nil {
		pr.Reason = make(ReasonStats, len(other.Reason))
	}
	for k, v := range other.Reason {
		pr.Reason[k] += v
	}
	if everything {
		pr.ConfigsUpdated = nil
	}
	pr.mergeFields(other, everything)
}

// mergeFields merges everything but Reason into pr. When the result
// concerns every object, pr.ConfigsUpdated is already nil and stays so.
func (pr *PushRequest) mergeFields(other *PushRequest, everything bool) {
	pr.Full = pr.Full || other.Full
	pr.Forced = pr.Forced || other.Forced
	// the newer snapshot wins, whichever request arrived last: a connection
	// that merged a late request built from an older snapshot must not
	// regress to it
	if other.Push != nil && (pr.Push == nil || other.Push.Seq() > pr.Push.Seq()) {
		pr.Push = other.Push
	}
	if pr.Start.IsZero() || (!other.Start.IsZero() && other.Start.Before(pr.Start)) {
		pr.Start = other.Start
	}
	if !everything && len(other.ConfigsUpdated) > 0 {
		if pr.ConfigsUpdated == nil {
			pr.ConfigsUpdated = make(map[ConfigKey]struct{}, len(other.ConfigsUpdated))
		}
		for k := range other.ConfigsUpdated {
			pr.ConfigsUpdated[k] = struct{}{}
		}
	}
	applyDelta(&pr.Delta, other.Delta)
}

// applyDelta applies a later subscription change to an earlier one: a name
// subscribed later is no longer unsubscribed, and the other way round.
func applyDelta(d *ResourceDelta, later ResourceDelta) {
	for n := range later.Subscribed {
		if d.Subscribed == nil {
			d.Subscribed = map[string]struct{}{}
		}
		d.Subscribed[n] = struct{}{}
		delete(d.Unsubscribed, n)
	}
	for n := range later.Unsubscribed {
		if d.Unsubscribed == nil {
			d.Unsubscribed = map[string]struct{}{}
		}
		d.Unsubscribed[n] = struct{}{}
		delete(d.Subscribed, n)
	}
}

// IsEverything reports whether the request concerns every object: a full
// push that names nothing.
func (pr *PushRequest) IsEverything() bool { return pr.Full && len(pr.ConfigsUpdated) == 0 }

// IsRequest reports whether the push answers a client request only.
func (pr *PushRequest) IsRequest() bool { return len(pr.Reason) == 1 && pr.Reason.Has(ProxyRequest) }

// IsProxyUpdate reports whether a change to a proxy itself triggered the push.
func (pr *PushRequest) IsProxyUpdate() bool { return pr.Reason.Has(ProxyUpdate) }

// ConfigKeys returns ConfigsUpdated sorted by kind, namespace, name.
func (pr *PushRequest) ConfigKeys() []ConfigKey {
	out := make([]ConfigKey, 0, len(pr.ConfigsUpdated))
	for k := range pr.ConfigsUpdated {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Kind != b.Kind {
			return a.Kind < b.Kind
		}
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		return a.Name < b.Name
	})
	return out
}

// Validate checks the request's invariants: kind.Service never appears in
// ConfigsUpdated (services are keyed as kind.ServiceEntry by the registries).
func (pr *PushRequest) Validate() error {
	if HasConfigsOfKind(pr.ConfigsUpdated, kind.Service) {
		return fmt.Errorf("push request names kind Service in ConfigsUpdated (%v); service changes must use kind ServiceEntry",
			ConfigsOfKind(pr.ConfigsUpdated, kind.Service))
	}
	return nil
}

// String summarises the request for logs.
func (pr *PushRequest) String() string {
	if pr == nil {
		return "<nil>"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "full=%t forced=%t reasons=%s", pr.Full, pr.Forced, pr.Reason)
	if pr.IsEverything() {
		b.WriteString(" configs=*")
		return b.String()
	}
	keys := pr.ConfigKeys()
	const shown = 10
	parts := make([]string, 0, min(len(keys), shown))
	for i, k := range keys {
		if i == shown {
			break
		}
		parts = append(parts, k.String())
	}
	fmt.Fprintf(&b, " configs=[%s]", strings.Join(parts, " "))
	if len(keys) > shown {
		fmt.Fprintf(&b, " (+%d more)", len(keys)-shown)
	}
	return b.String()
}

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

// ConfigNamesOfKind returns the names of the changed keys of kind k.
func ConfigNamesOfKind(cfgs map[ConfigKey]struct{}, k kind.Kind) map[string]struct{} {
	out := map[string]struct{}{}
	for c := range cfgs {
		if c.Kind == k {
			out[c.Name] = struct{}{}
		}
	}
	return out
}

func copyKeys(in map[ConfigKey]struct{}, extra int) map[ConfigKey]struct{} {
	if in == nil && extra == 0 {
		return nil
	}
	out := make(map[ConfigKey]struct{}, len(in)+extra)
	for k := range in {
		out[k] = struct{}{}
	}
	return out
}

func copyNames(in map[string]struct{}) map[string]struct{} {
	if in == nil {
		return nil
	}
	out := make(map[string]struct{}, len(in))
	for k := range in {
		out[k] = struct{}{}
	}
	return out
}

// PushResult is what one push did, for /debug/pushz: the xDS server's push
// callback returns it to the push engine.
type PushResult struct {
	// ProxiesPushed counts the connections the push was queued for.
	ProxiesPushed int
	// IndexesRebuilt and IndexesReused name the PushContext indexes built
	// for this push and those reused from the previous snapshot.
	IndexesRebuilt []string
	IndexesReused  []string
}
