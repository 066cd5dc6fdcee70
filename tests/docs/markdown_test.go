package docs

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// root is the repository root, relative to this package.
const root = "../.."

// mdTable is one markdown table: the heading it sits under, its header
// cells and its rows.
type mdTable struct {
	file    string
	heading string
	header  []string
	rows    []mdRow
}

type mdRow struct {
	line  int
	cells []string
}

// where names a row for failure messages.
func (t mdTable) where(r mdRow) string {
	return t.file + ":" + itoa(r.line)
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	for ; n > 0; n /= 10 {
		b = append([]byte{byte('0' + n%10)}, b...)
	}
	return string(b)
}

// readDoc reads a file of the repository (path relative to the root).
func readDoc(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, path))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return string(b)
}

// tables parses every table of a markdown file, skipping fenced code.
func tables(t *testing.T, path string) []mdTable {
	t.Helper()
	lines := strings.Split(readDoc(t, path), "\n")
	var out []mdTable
	heading := ""
	fenced := false
	for i := 0; i < len(lines); i++ {
		l := strings.TrimSpace(lines[i])
		if strings.HasPrefix(l, "```") {
			fenced = !fenced
			continue
		}
		if fenced {
			continue
		}
		if strings.HasPrefix(l, "#") {
			heading = strings.TrimSpace(strings.TrimLeft(l, "#"))
			continue
		}
		if !strings.HasPrefix(l, "|") || i+1 >= len(lines) || !isSeparator(lines[i+1]) {
			continue
		}
		tb := mdTable{file: path, heading: heading, header: splitRow(l)}
		i += 2
		for ; i < len(lines) && strings.HasPrefix(strings.TrimSpace(lines[i]), "|"); i++ {
			tb.rows = append(tb.rows, mdRow{line: i + 1, cells: splitRow(strings.TrimSpace(lines[i]))})
		}
		i--
		out = append(out, tb)
	}
	return out
}

var separatorRE = regexp.MustCompile(`^\s*\|(\s*:?-+:?\s*\|)+\s*$`)

func isSeparator(l string) bool { return separatorRE.MatchString(l) }

// splitRow splits a table row on the pipes outside code spans (an xDS name
// such as `outbound|80||host` stays one cell) and unescaped.
func splitRow(l string) []string {
	l = strings.TrimSuffix(strings.TrimPrefix(l, "|"), "|")
	var cells []string
	var cur strings.Builder
	code := false
	for i := 0; i < len(l); i++ {
		c := l[i]
		switch {
		case c == '\\' && i+1 < len(l) && l[i+1] == '|':
			cur.WriteByte('|')
			i++
		case c == '`':
			code = !code
			cur.WriteByte(c)
		case c == '|' && !code:
			cells = append(cells, strings.TrimSpace(cur.String()))
			cur.Reset()
		default:
			cur.WriteByte(c)
		}
	}
	return append(cells, strings.TrimSpace(cur.String()))
}

var codeSpanRE = regexp.MustCompile("`([^`]+)`")

// codeSpans returns the contents of the code spans of a cell, in order.
func codeSpans(cell string) []string {
	var out []string
	for _, m := range codeSpanRE.FindAllStringSubmatch(cell, -1) {
		out = append(out, m[1])
	}
	return out
}

// tablesWith returns the tables of a file whose first header cell is key
// (case-insensitive).
func tablesWith(t *testing.T, path, key string) []mdTable {
	t.Helper()
	var out []mdTable
	for _, tb := range tables(t, path) {
		if len(tb.header) > 0 && strings.EqualFold(tb.header[0], key) {
			out = append(out, tb)
		}
	}
	if len(out) == 0 {
		t.Fatalf("%s: no table whose first column is %q", path, key)
	}
	return out
}

// column is the index of the header cell named name, or -1.
func (t mdTable) column(name string) int {
	for i, h := range t.header {
		if strings.EqualFold(h, name) {
			return i
		}
	}
	return -1
}

// cell is a row's cell at index i ("" when missing).
func (r mdRow) cell(i int) string {
	if i < 0 || i >= len(r.cells) {
		return ""
	}
	return r.cells[i]
}

// listed is one name a doc lists, with where it is listed.
type listed struct {
	name  string
	where string
	row   mdRow
	table mdTable
}

// firstColumnNames returns every code span of the first column of the
// tables given, each with its row. A row without a code span in its first
// cell is an error: the tables are meant to be read by this test.
func firstColumnNames(t *testing.T, tbs []mdTable) []listed {
	t.Helper()
	var out []listed
	for _, tb := range tbs {
		for _, r := range tb.rows {
			names := codeSpans(r.cell(0))
			if len(names) == 0 {
				t.Errorf("%s: first cell %q names nothing in backticks", tb.where(r), r.cell(0))
			}
			for _, n := range names {
				out = append(out, listed{name: n, where: tb.where(r), row: r, table: tb})
			}
		}
	}
	return out
}

// compareSets reports what the code has and the doc lacks, and what the doc
// lists and the code lacks (or lists twice).
func compareSets(t *testing.T, what, doc string, code map[string]string, docNames []listed) {
	t.Helper()
	seen := map[string]string{}
	for _, l := range docNames {
		if prev, dup := seen[l.name]; dup {
			t.Errorf("%s: %s %s listed twice (also %s)", l.where, what, l.name, prev)
			continue
		}
		seen[l.name] = l.where
		if _, ok := code[l.name]; !ok {
			t.Errorf("%s: %s %s is listed but the code has none by that name: remove the row or fix the name", l.where, what, l.name)
		}
	}
	for _, name := range sortedKeys(code) {
		if _, ok := seen[name]; !ok {
			t.Errorf("%s: %s %s (%s) is missing: add a row for it", doc, what, name, code[name])
		}
	}
}
