package deployment

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"sigs.k8s.io/yaml"
)

// TemplateName is the injection template Istio renders a Gateway of class
// istio from; WaypointTemplateName the one of a waypoint (controller
// istio.io/mesh-controller).
const (
	TemplateName         = "kube-gateway"
	WaypointTemplateName = "waypoint"
)

// ErrNoConfig is returned when there is no injection configuration.
var ErrNoConfig = errors.New("no injection configuration")

// Object is one object rendered for a Gateway. It is immutable once Render
// returns it.
type Object struct {
	kind      *kind
	Name      string
	Namespace string
	// Raw is the object as it is applied (generic JSON values), its
	// gateway.istio.io/managed label set.
	Raw map[string]any
	// want is Raw decoded into its Kubernetes type and converted back: the
	// form compared with the cluster's object.
	want map[string]any
}

// Kind is the object's kind (Deployment, Service, ...).
func (o *Object) Kind() string { return o.kind.name }

// Key is kind/namespace/name.
func (o *Object) Key() string { return o.kind.name + "/" + o.Namespace + "/" + o.Name }

// Render renders the objects of one Gateway from template name of the
// injection configuration, with the customization overlays (ConfigMap data
// by kind key: the class defaults first, then the Gateway's
// parametersRef), as Istio does. It is pure: the error names what is wrong.
func Render(s Source, env Environment, name string, overlays []map[string]string) ([]*Object, error) {
	if s.Config == nil {
		return nil, ErrNoConfig
	}
	t := s.Config.Templates[name]
	if t == nil {
		return nil, fmt.Errorf("no %q template defined", name)
	}
	if err := checkOverlayKeys(overlays); err != nil {
		return nil, err
	}
	in := NewTemplateInput(s, env)
	var buf bytes.Buffer
	if err := t.Execute(&buf, in); err != nil {
		return nil, fmt.Errorf("template %q: %v", name, err)
	}
	var out []*Object
	for i, doc := range splitDocuments(buf.String()) {
		o, err := decodeObject(doc, overlays, in)
		if err != nil {
			return nil, fmt.Errorf("template %q, object %d: %v", name, i+1, err)
		}
		if o == nil {
			continue
		}
		if err := setManagedLabel(o, s.Controller); err != nil {
			return nil, fmt.Errorf("template %q, %s %s: %v", name, o.kind.name, o.Name, err)
		}
		if o.want, err = normalize(o.kind, o.Raw); err != nil {
			return nil, fmt.Errorf("template %q, %s %s: %v", name, o.kind.name, o.Name, err)
		}
		out = append(out, o)
	}
	return out, nil
}

// splitDocuments splits a rendered multi-document YAML at lines starting
// with "---", dropping empty documents.
func splitDocuments(s string) []string {
	var out []string
	var cur strings.Builder
	flush := func() {
		if d := strings.TrimSpace(cur.String()); d != "" {
			out = append(out, d)
		}
		cur.Reset()
	}
	sc := bufio.NewScanner(strings.NewReader(s))
	sc.Buffer(make([]byte, 0, 64*1024), 16*1024*1024)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "---") {
			flush()
			continue
		}
		cur.WriteString(line)
		cur.WriteByte('\n')
	}
	flush()
	return out
}

// decodeObject parses one document, applies the overlays of its kind and
// checks it is an object Istio may write for the Gateway. It returns nil
// for an optional kind no overlay asks for.
func decodeObject(doc string, overlays []map[string]string, in TemplateInput) (*Object, error) {
	raw := map[string]any{}
	if err := yaml.Unmarshal([]byte(doc), &raw); err != nil {
		return nil, fmt.Errorf("invalid YAML: %v", err)
	}
	kindName, _ := raw["kind"].(string)
	k := kindByName(kindName)
	if k == nil {
		return nil, fmt.Errorf("kind %q is not one a gateway template may render (%s)", kindName, kindNames())
	}
	if av, _ := raw["apiVersion"].(string); av != k.apiVersion {
		return nil, fmt.Errorf("%s has apiVersion %q, want %q", kindName, av, k.apiVersion)
	}
	raw, customized, err := applyOverlays(raw, k, overlays)
	if err != nil {
		return nil, err
	}
	if k.optional && !customized {
		return nil, nil
	}
	meta, _ := raw["metadata"].(map[string]any)
	o := &Object{kind: k, Raw: raw}
	o.Name, _ = meta["name"].(string)
	o.Namespace, _ = meta["namespace"].(string)
	if o.Namespace != in.Namespace {
		return nil, fmt.Errorf("%s %s: namespace %q is not the Gateway's %q", kindName, o.Name, o.Namespace, in.Namespace)
	}
	if o.Name != in.DeploymentName && o.Name != in.ServiceAccount && !strings.HasPrefix(o.Name, in.Name) {
		return nil, fmt.Errorf("%s %q: a name must be %q, %q or start with %q", kindName, o.Name, in.DeploymentName, in.ServiceAccount, in.Name)
	}
	return o, nil
}

func kindNames() string {
	names := make([]string, len(kinds))
	for i, k := range kinds {
		names[i] = k.name
	}
	return strings.Join(names, ", ")
}

// checkOverlayKeys refuses a customization key Istio does not know.
func checkOverlayKeys(overlays []map[string]string) error {
	for _, o := range overlays {
		for key := range o {
			if kindByOverlay(key) == nil {
				var known []string
				for _, k := range kinds {
					known = append(known, k.overlay)
				}
				sort.Strings(known)
				return fmt.Errorf("unsupported overlay %q (supported: %v)", key, known)
			}
		}
	}
	return nil
}

// immutableMeta are the metadata fields an overlay must not change.
var immutableMeta = []string{"name", "generateName", "namespace", "uid", "resourceVersion", "generation",
	"creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "ownerReferences", "finalizers", "managedFields"}

// applyOverlays merges the overlays of k's key into raw in order, as
// strategic merge patches.
func applyOverlays(raw map[string]any, k *kind, overlays []map[string]string) (map[string]any, bool, error) {
	applied := false
	for _, o := range overlays {
		patchText, ok := o[k.overlay]
		if !ok {
			continue
		}
		patch := map[string]any{}
		if err := yaml.Unmarshal([]byte(patchText), &patch); err != nil {
			return nil, false, fmt.Errorf("overlay %q: invalid YAML: %v", k.overlay, err)
		}
		schema, err := strategicpatch.NewPatchMetaFromStruct(k.new())
		if err != nil {
			return nil, false, err
		}
		// the patch may change raw in place: keep what must not change
		before := map[string]any{}
		if md, ok := raw["metadata"].(map[string]any); ok {
			for _, f := range immutableMeta {
				before[f] = jsonCopy(md[f])
			}
		}
		merged, err := strategicpatch.StrategicMergeMapPatchUsingLookupPatchMeta(raw, patch, schema)
		if err != nil {
			return nil, false, fmt.Errorf("overlay %q: strategic merge patch failed: %v", k.overlay, err)
		}
		after, _ := merged["metadata"].(map[string]any)
		for _, f := range immutableMeta {
			if !reflect.DeepEqual(before[f], after[f]) {
				return nil, false, fmt.Errorf("overlay %q: illegal metadata change (metadata.%s)", k.overlay, f)
			}
		}
		raw, applied = merged, true
	}
	return raw, applied, nil
}

// jsonCopy is a deep copy of a JSON value (nil when it is not one).
func jsonCopy(v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	var out any
	_ = json.Unmarshal(b, &out)
	return out
}

// setManagedLabel marks the object as generated by controller.
func setManagedLabel(o *Object, controller string) error {
	meta, ok := o.Raw["metadata"].(map[string]any)
	if !ok {
		return errors.New("no metadata")
	}
	labels, _ := meta["labels"].(map[string]any)
	if labels == nil {
		labels = map[string]any{}
		meta["labels"] = labels
	}
	labels[LabelManaged] = managedValue(controller)
	return nil
}

// normalize decodes raw into k's Go type and converts it back, so that it
// compares with an object read from the cluster (quantities canonical, for
// example), keeping only the fields raw sets: a Go type's zero values (a
// targetPort of 0, an empty strategy) are not what the template asks for.
func normalize(k *kind, raw map[string]any) (map[string]any, error) {
	b, err := json.Marshal(raw)
	if err != nil {
		return nil, err
	}
	typed := k.new()
	if err := json.Unmarshal(b, typed); err != nil {
		return nil, fmt.Errorf("not a valid %s: %v", k.name, err)
	}
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(typed)
	if err != nil {
		return nil, err
	}
	out, _ := prune(u, raw).(map[string]any)
	return out, nil
}

// prune keeps of typed the fields raw sets (not null).
func prune(typed, raw any) any {
	switch r := raw.(type) {
	case map[string]any:
		t, ok := typed.(map[string]any)
		if !ok {
			return typed
		}
		out := make(map[string]any, len(r))
		for k, rv := range r {
			if tv, ok := t[k]; ok && rv != nil {
				out[k] = prune(tv, rv)
			}
		}
		return out
	case []any:
		t, ok := typed.([]any)
		if !ok || len(t) != len(r) {
			return typed
		}
		out := make([]any, len(t))
		for i := range t {
			out[i] = prune(t[i], r[i])
		}
		return out
	}
	return typed
}
