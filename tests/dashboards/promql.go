package dashboards

import (
	"regexp"
	"sort"
	"strings"
)

// Selector is one metric a PromQL expression reads: its name, the label
// matchers of its selector and the labels the expression groups it by
// (by (...) clauses of an expression that reads this one metric only).
type Selector struct {
	Metric   string
	Matchers []Matcher
	GroupBy  []string
}

// Matcher is one label matcher: Label Op "Value", Op one of = != =~ !~.
type Matcher struct {
	Label, Op, Value string
}

var (
	groupingRE = regexp.MustCompile(`\b(?:by|without)\s*\(([^)]*)\)`)
	rangeRE    = regexp.MustCompile(`\[[^\]]*\]`)
	matcherRE  = regexp.MustCompile(`([A-Za-z_][A-Za-z0-9_]*)\s*(=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)"`)
)

// promqlKeywords are the identifiers of PromQL that are not metric names
// when they are not followed by "(".
var promqlKeywords = map[string]bool{
	"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true,
	"bool": true, "and": true, "or": true, "unless": true, "offset": true, "inf": true, "nan": true,
}

// Selectors returns the metrics a PromQL expression reads, in order of
// appearance. It knows the subset of PromQL dashboards use: selectors
// with or without matchers, range vectors, function calls, aggregations
// with by/without, binary operators, numbers, strings and Grafana's
// $variables.
func Selectors(expr string) []Selector {
	var groups []string
	for _, m := range groupingRE.FindAllStringSubmatch(expr, -1) {
		for _, l := range strings.Split(m[1], ",") {
			if l = strings.TrimSpace(l); l != "" {
				groups = append(groups, l)
			}
		}
	}
	s := groupingRE.ReplaceAllString(expr, " ")
	s = rangeRE.ReplaceAllString(s, " ")
	var out []Selector
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '"' || c == '\'' || c == '`':
			i = skipString(s, i)
		case c == '$':
			i++
			for i < len(s) && isIdent(s[i]) {
				i++
			}
		case c >= '0' && c <= '9' || c == '.':
			for i < len(s) && (isIdent(s[i]) || s[i] == '.') {
				i++
			}
		case isIdentStart(c):
			start := i
			for i < len(s) && isIdent(s[i]) {
				i++
			}
			name := s[start:i]
			j := skipSpace(s, i)
			if j < len(s) && s[j] == '(' || promqlKeywords[strings.ToLower(name)] {
				continue // a function, an aggregation or a keyword
			}
			sel := Selector{Metric: name}
			if j < len(s) && s[j] == '{' {
				end := strings.IndexByte(s[j:], '}')
				if end < 0 {
					end = len(s) - j - 1
				}
				for _, m := range matcherRE.FindAllStringSubmatch(s[j:j+end+1], -1) {
					sel.Matchers = append(sel.Matchers, Matcher{Label: m[1], Op: m[2], Value: m[3]})
				}
				i = j + end + 1
			}
			out = append(out, sel)
		case c == '{':
			// a selector without a name ({__name__=...}): none in dashboards
			end := strings.IndexByte(s[i:], '}')
			if end < 0 {
				return out
			}
			i += end + 1
		default:
			i++
		}
	}
	if len(out) == 1 {
		out[0].GroupBy = groups
	}
	return out
}

// MetricNames returns the sorted, distinct metric names of exprs.
func MetricNames(exprs []string) []string {
	seen := map[string]bool{}
	for _, e := range exprs {
		for _, s := range Selectors(e) {
			seen[s.Metric] = true
		}
	}
	out := make([]string, 0, len(seen))
	for n := range seen {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

func skipString(s string, i int) int {
	q := s[i]
	for i++; i < len(s); i++ {
		switch {
		case s[i] == '\\' && q != '`':
			i++
		case s[i] == q:
			return i + 1
		}
	}
	return i
}

func skipSpace(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') {
		i++
	}
	return i
}

func isIdentStart(c byte) bool {
	return c == '_' || c == ':' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

func isIdent(c byte) bool { return isIdentStart(c) || c >= '0' && c <= '9' }

var (
	// legendRE is the first argument of self.query: a legend, not PromQL.
	legendRE = regexp.MustCompile(`self\.query\(\s*'(?:[^'\\]|\\.)*'\s*,`)
	// byListRE is the by=[...] argument of the library's sum: label names.
	byListRE = regexp.MustCompile(`by=\[[^\]]*\]`)
	// panelOptionRE are the query options (format, refId, ...).
	panelOptionRE = regexp.MustCompile(`q\.with[A-Za-z]*\([^)]*\)`)
	jsonnetStrRE  = regexp.MustCompile(`(?s)\|\|\|(.*?)\|\|\||'((?:[^'\\]|\\.)*)'|"((?:[^"\\]|\\.)*)"`)
	queryRefRE    = regexp.MustCompile(`(?:^|[^/\w])queries\.([A-Za-z_][A-Za-z0-9_]*)`)
	queryFieldRE  = regexp.MustCompile(`(?m)^      ([A-Za-z0-9_]+):`)
	blockEndRE    = regexp.MustCompile(`(?m)^      (?:local |[A-Za-z0-9_]+:)|^    }`)
)

// LibsonnetQueries returns the PromQL fragments of the queries a dashboard
// source uses (queries.<name> in dashboard) as its queries library defines
// them (the fields of lib/queries.libsonnet), with the names of the queries
// the library lacks. A fragment is a string literal of a query's
// definition that is not a legend, a label list or a panel option: either
// a metric name the library's helpers wrap (labels('m', ...), sum('m')) or
// raw PromQL.
func LibsonnetQueries(dashboard, library string) (fragments map[string][]string, missing []string) {
	fragments = map[string][]string{}
	starts := map[string]int{}
	for _, m := range queryFieldRE.FindAllStringSubmatchIndex(library, -1) {
		starts[library[m[2]:m[3]]] = m[1]
	}
	for _, m := range queryRefRE.FindAllStringSubmatch(dashboard, -1) {
		name := m[1]
		if _, done := fragments[name]; done {
			continue
		}
		start, ok := starts[name]
		if !ok {
			missing = append(missing, name)
			fragments[name] = nil
			continue
		}
		body := library[start:]
		if end := blockEndRE.FindStringIndex(body); end != nil {
			body = body[:end[0]]
		}
		body = legendRE.ReplaceAllString(body, "self.query(")
		body = byListRE.ReplaceAllString(body, "")
		body = panelOptionRE.ReplaceAllString(body, "")
		var frags []string
		for _, s := range jsonnetStrRE.FindAllStringSubmatch(body, -1) {
			frag := s[1] + s[2] + s[3]
			if strings.TrimSpace(frag) != "" {
				frags = append(frags, frag)
			}
		}
		fragments[name] = frags
	}
	return fragments, missing
}
