package differential

import (
	"bytes"
	"encoding/json"
	"fmt"
	"github.com/meshplane/istiod/tests/golden"
	"regexp"
	"strings"
)

// Allowed is one difference a case accepts, by name, with the reason.
// It covers a difference whose type, resource name and field path match
// its patterns; the path also covers what lies below it.
//
// Patterns: "*" matches any run of characters other than "." (so
// "virtualHosts[*].domains" matches every virtual host's domains), "**"
// any run at all; "" matches everything. Paths are those the reports
// print: field names as protojson writes them, list indexes in brackets
// ("filterChains[0].filters[1].typedConfig.httpFilters[3]"), and, for a
// list whose lengths differ and whose elements have names, the name
// ("virtualHosts[name=a.ns.svc.cluster.local:80]"). A missing resource
// has the path "" (only Path "" or "**" covers it).
type Allowed struct {
	// Name identifies the difference in reports ("istio-sets-decorator").
	Name string
	// Type is cds, eds, lds or rds ("" all).
	Type string
	// Resource is a pattern for the resource name.
	Resource string
	// Path is a pattern for the field path.
	Path string
	// Why explains the difference: why it is acceptable, or which issue
	// tracks it.
	Why string
	// Intermittent marks a difference Istio's side shows in some runs
	// only (its answer depends on what it built before): covering nothing
	// does not fail the case.
	Intermittent bool
}

func (a Allowed) covers(d Difference) bool {
	if a.Type != "" && a.Type != d.Type {
		return false
	}
	if a.Resource != "" && !globMatch(a.Resource, d.Resource, false) {
		return false
	}
	if a.Path == "" {
		return true
	}
	return globMatch(a.Path, d.Path, true)
}

// globMatch matches a pattern (see Allowed) against s; with below, also
// against any path below s's prefix the pattern matches.
func globMatch(pattern, s string, below bool) bool {
	var b strings.Builder
	b.WriteString("^")
	for i := 0; i < len(pattern); i++ {
		switch {
		case strings.HasPrefix(pattern[i:], "**"):
			b.WriteString(".*")
			i++
		case pattern[i] == '*':
			b.WriteString(`[^.]*`)
		default:
			b.WriteString(regexp.QuoteMeta(pattern[i : i+1]))
		}
	}
	if below {
		b.WriteString(`(?:$|[.\[].*)`)
	} else {
		b.WriteString("$")
	}
	re, err := regexp.Compile(b.String())
	return err == nil && re.MatchString(s)
}

// Difference is one place where the two control planes disagree.
type Difference struct {
	Type     string // cds, eds, lds, rds
	Resource string // the resource's name
	Path     string // the field ("" the whole resource)
	// Ours and Istio are the JSON values (nil: absent).
	Ours, Istio any
}

func (d Difference) String() string {
	where := d.Type + " " + d.Resource
	if d.Path != "" {
		where += ": " + d.Path
	}
	return fmt.Sprintf("%s\n    ours:  %s\n    Istio: %s", where, clip(d.Ours), clip(d.Istio))
}

func clip(v any) string {
	if v == nil {
		return "(absent)"
	}
	s := string(marshal(v, ""))
	if len(s) > 2000 {
		s = s[:2000] + "…"
	}
	return s
}

// marshal writes JSON without HTML escapes ("<clusterIP …>" stays
// readable), indented by indent when not empty.
func marshal(v any, indent string) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if indent != "" {
		enc.SetIndent("", indent)
	}
	_ = enc.Encode(v)
	return bytes.TrimRight(b.Bytes(), "\n")
}

// compareSnapshots lists every difference between two rendered
// snapshots (type → name → JSON), in type, name, path order.
func compareSnapshots(ours, istio map[string]map[string]any) []Difference {
	var out []Difference
	for _, typ := range Types {
		o, i := ours[typ], istio[typ]
		for _, name := range golden.UnionKeys(o, i) {
			ov, oOK := o[name]
			iv, iOK := i[name]
			if !oOK || !iOK {
				out = append(out, Difference{Type: typ, Resource: name, Ours: ov, Istio: iv})
				continue
			}
			for _, d := range golden.Differences("", ov, iv, true) {
				out = append(out, Difference{Type: typ, Resource: name, Path: d.Path, Ours: d.Got, Istio: d.Want})
			}
		}
	}
	return out
}
