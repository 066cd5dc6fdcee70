package inject

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"text/template"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// Policy is the injection policy of the ConfigMap's config key.
type Policy string

// The policies Istio knows; any other value disables injection.
const (
	PolicyEnabled  Policy = "enabled"
	PolicyDisabled Policy = "disabled"
)

// SidecarTemplate is the template used when the config names no default.
const SidecarTemplate = "sidecar"

// rawConfig is the "config" key of the injector ConfigMap as the chart writes
// it. Keys it does not name (such as the chart's legacy "template") are
// ignored, as Istio ignores them.
type rawConfig struct {
	Policy               Policy                 `json:"policy"`
	DefaultTemplates     []string               `json:"defaultTemplates"`
	Templates            map[string]string      `json:"templates"`
	Aliases              map[string][]string    `json:"aliases"`
	NeverInjectSelector  []metav1.LabelSelector `json:"neverInjectSelector"`
	AlwaysInjectSelector []metav1.LabelSelector `json:"alwaysInjectSelector"`
	InjectedAnnotations  map[string]string      `json:"injectedAnnotations"`
}

// Config is one parsed version of the injector ConfigMap. It is immutable
// once ParseConfig returns it: readers share it and must not modify it.
type Config struct {
	Policy               Policy
	DefaultTemplates     []string
	Aliases              map[string][]string
	NeverInjectSelector  []metav1.LabelSelector
	AlwaysInjectSelector []metav1.LabelSelector
	InjectedAnnotations  map[string]string
	// RawTemplates are the templates' texts by name (what /debug/inject
	// shows); Templates the same, parsed.
	RawTemplates map[string]string
	Templates    map[string]*template.Template
	// Values are the chart values of the "values" key.
	Values Values
}

// ParseConfig parses the ConfigMap's "config" text (YAML) and "values" text
// (JSON or YAML). Every template must parse; an error names the template and
// the line. A config without defaultTemplates defaults to [sidecar].
func ParseConfig(configText, valuesText string) (*Config, error) {
	var raw rawConfig
	if err := yaml.Unmarshal([]byte(configText), &raw); err != nil {
		return nil, fmt.Errorf("key config: %v", err)
	}
	values, err := ParseValues(valuesText)
	if err != nil {
		return nil, fmt.Errorf("key values: %v", err)
	}
	c := &Config{
		Policy:               raw.Policy,
		DefaultTemplates:     raw.DefaultTemplates,
		Aliases:              raw.Aliases,
		NeverInjectSelector:  raw.NeverInjectSelector,
		AlwaysInjectSelector: raw.AlwaysInjectSelector,
		InjectedAnnotations:  raw.InjectedAnnotations,
		RawTemplates:         raw.Templates,
		Templates:            make(map[string]*template.Template, len(raw.Templates)),
		Values:               values,
	}
	if c.RawTemplates == nil {
		c.RawTemplates = map[string]string{}
	}
	if len(c.DefaultTemplates) == 0 {
		c.DefaultTemplates = []string{SidecarTemplate}
	}
	var errs []error
	for _, name := range sortedKeys(c.RawTemplates) {
		t, err := parseTemplate(name, c.RawTemplates[name])
		if err != nil {
			errs = append(errs, fmt.Errorf("template %q: %v", name, err))
			continue
		}
		c.Templates[name] = t
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return c, nil
}

func parseTemplate(name, text string) (*template.Template, error) {
	return template.New(name).Funcs(templateFuncs).Parse(text)
}

// Warnings are the config's findings that do not stop it from being used.
func (c *Config) Warnings() []string {
	var out []string
	if len(c.RawTemplates) == 0 {
		out = append(out, "no injection templates: the ConfigMap may come from an older Istio; pods cannot be injected")
	}
	switch c.Policy {
	case PolicyEnabled, PolicyDisabled:
	default:
		out = append(out, fmt.Sprintf("policy %q is neither %q nor %q: injection is disabled", c.Policy, PolicyEnabled, PolicyDisabled))
	}
	for _, name := range c.DefaultTemplates {
		for _, n := range c.resolve([]string{name}) {
			if _, ok := c.Templates[n]; !ok {
				out = append(out, fmt.Sprintf("default template %q not found; have %s", n, strings.Join(sortedKeys(c.RawTemplates), ", ")))
			}
		}
	}
	return out
}

// resolve expands aliases (one level, as Istio).
func (c *Config) resolve(names []string) []string {
	out := make([]string, 0, len(names))
	for _, n := range names {
		if a, ok := c.Aliases[n]; ok {
			out = append(out, a...)
			continue
		}
		out = append(out, n)
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
