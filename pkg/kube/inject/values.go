package inject

import (
	"fmt"

	"sigs.k8s.io/yaml"
)

// Values are the chart values of the injector ConfigMap, as a generic map
// (what templates see as .Values: JSON numbers are float64) with accessors
// for the few values the injector itself reads.
type Values map[string]any

// ParseValues parses the "values" key (JSON, or YAML). An empty text gives
// empty values.
func ParseValues(text string) (Values, error) {
	v := map[string]any{}
	if err := yaml.Unmarshal([]byte(text), &v); err != nil {
		return nil, err
	}
	if v == nil {
		v = map[string]any{}
	}
	return Values(v), nil
}

// lookup walks a path of map keys; nil when any step is missing.
func (v Values) lookup(path ...string) any {
	var cur any = map[string]any(v)
	for _, p := range path {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[p]
	}
	return cur
}

// String returns the value at path as a string ("" when missing or null);
// numbers and booleans are formatted as Go formats them (%v).
func (v Values) String(path ...string) string {
	x := v.lookup(path...)
	if x == nil {
		return ""
	}
	if s, ok := x.(string); ok {
		return s
	}
	return fmt.Sprint(x)
}

// Bool returns the value at path when it is a boolean (false otherwise).
func (v Values) Bool(path ...string) bool {
	b, _ := v.lookup(path...).(bool)
	return b
}

// BoolOr returns the value at path when it is a boolean, else def.
func (v Values) BoolOr(def bool, path ...string) bool {
	if b, ok := v.lookup(path...).(bool); ok {
		return b
	}
	return def
}
