package docs

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// This file reads the module's non-test Go sources with go/parser (no type
// checking, so a package someone is half-way through editing elsewhere
// still scans) and resolves the string values an expression can take: a
// literal, a constant of the package or of another package of the module,
// a concatenation, or a range variable over a literal table (the
// `for _, e := range []struct{name string; ...}{{"X", ...}}` tables the
// command reads its environment from, the map of problem gauges).

const module = "github.com/meshplane/istiod"

// srcPkg is one package directory's non-test files.
type srcPkg struct {
	dir    string // relative to the root, slash-separated
	files  []*srcFile
	consts map[string]constDef // package-level constants and their values
	types  map[string]*ast.TypeSpec
}

// constDef is a constant's value and the file declaring it (whose imports
// its value's selectors refer to).
type constDef struct {
	expr ast.Expr
	file *srcFile
}

type srcFile struct {
	path    string // relative to the root
	ast     *ast.File
	imports map[string]string // local name → import path
	pkg     *srcPkg
}

type source struct {
	fset *token.FileSet
	pkgs map[string]*srcPkg // by directory
}

var (
	srcOnce sync.Once
	srcAll  *source
	srcErr  error
)

// loadSource parses every non-test Go file of the module once.
func loadSource(t *testing.T) *source {
	t.Helper()
	srcOnce.Do(func() { srcAll, srcErr = parseModule() })
	if srcErr != nil {
		t.Fatal(srcErr)
	}
	return srcAll
}

func parseModule() (*source, error) {
	s := &source{fset: token.NewFileSet(), pkgs: map[string]*srcPkg{}}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") ||
				name == "testdata" || name == "vendor" || name == "out" || name == "docs" && filepath.Dir(path) == root) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		f, err := parser.ParseFile(s.fset, path, nil, parser.ParseComments)
		if err != nil {
			return err
		}
		dir := filepath.ToSlash(filepath.Dir(rel))
		p := s.pkgs[dir]
		if p == nil {
			p = &srcPkg{dir: dir, consts: map[string]constDef{}, types: map[string]*ast.TypeSpec{}}
			s.pkgs[dir] = p
		}
		sf := &srcFile{path: rel, ast: f, imports: map[string]string{}, pkg: p}
		for _, im := range f.Imports {
			ip, _ := strconv.Unquote(im.Path.Value)
			local := ip[strings.LastIndex(ip, "/")+1:]
			if im.Name != nil {
				local = im.Name.Name
			}
			sf.imports[local] = ip
		}
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok {
				continue
			}
			for _, spec := range gd.Specs {
				switch sp := spec.(type) {
				case *ast.ValueSpec:
					if gd.Tok != token.CONST {
						continue
					}
					for i, n := range sp.Names {
						if i < len(sp.Values) {
							p.consts[n.Name] = constDef{expr: sp.Values[i], file: sf}
						}
					}
				case *ast.TypeSpec:
					p.types[sp.Name.Name] = sp
				}
			}
		}
		p.files = append(p.files, sf)
		return nil
	})
	return s, err
}

// dirs returns the package directories under the given top-level
// directories, sorted.
func (s *source) dirs(tops ...string) []*srcPkg {
	var out []*srcPkg
	for dir, p := range s.pkgs {
		for _, top := range tops {
			if dir == top || strings.HasPrefix(dir, top+"/") {
				out = append(out, p)
				break
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].dir < out[j].dir })
	return out
}

// pos renders a position as path:line relative to the root.
func (s *source) pos(f *srcFile, p token.Pos) string {
	return f.path + ":" + strconv.Itoa(s.fset.Position(p).Line)
}

// importName is the local name a file gives an import path ("" when not
// imported).
func (f *srcFile) importName(path string) string {
	for local, ip := range f.imports {
		if ip == path {
			return local
		}
	}
	return ""
}

// constValue evaluates a string constant expression of package p.
func (s *source) constValue(p *srcPkg, f *srcFile, e ast.Expr, depth int) (string, bool) {
	if depth > 20 {
		return "", false
	}
	switch x := e.(type) {
	case *ast.BasicLit:
		if x.Kind != token.STRING {
			return "", false
		}
		v, err := strconv.Unquote(x.Value)
		return v, err == nil
	case *ast.ParenExpr:
		return s.constValue(p, f, x.X, depth+1)
	case *ast.BinaryExpr:
		if x.Op != token.ADD {
			return "", false
		}
		a, ok1 := s.constValue(p, f, x.X, depth+1)
		b, ok2 := s.constValue(p, f, x.Y, depth+1)
		return a + b, ok1 && ok2
	case *ast.Ident:
		if v, ok := p.consts[x.Name]; ok {
			return s.constValue(p, v.file, v.expr, depth+1)
		}
	case *ast.SelectorExpr:
		id, ok := x.X.(*ast.Ident)
		if !ok || f == nil {
			return "", false
		}
		ip, ok := f.imports[id.Name]
		if !ok || !strings.HasPrefix(ip, module+"/") {
			return "", false
		}
		op := s.pkgs[strings.TrimPrefix(ip, module+"/")]
		if op == nil {
			return "", false
		}
		if v, ok := op.consts[x.Sel.Name]; ok {
			return s.constValue(op, v.file, v.expr, depth+1)
		}
	case *ast.CallExpr:
		// a conversion to a named string type: T("x")
		if len(x.Args) == 1 {
			if id, ok := x.Fun.(*ast.Ident); ok {
				if _, isType := p.types[id.Name]; isType || id.Name == "string" {
					return s.constValue(p, f, x.Args[0], depth+1)
				}
			}
		}
	}
	return "", false
}

// values returns the strings an expression can take, or ok false when it
// cannot tell (a parameter, a field, a computed value).
func (s *source) values(f *srcFile, e ast.Expr) ([]string, bool) {
	return s.valuesDepth(f, e, 0)
}

func (s *source) valuesDepth(f *srcFile, e ast.Expr, depth int) ([]string, bool) {
	if depth > 10 {
		return nil, false
	}
	if v, ok := s.constValue(f.pkg, f, e, 0); ok {
		return []string{v}, true
	}
	switch x := e.(type) {
	case *ast.ParenExpr:
		return s.valuesDepth(f, x.X, depth+1)
	case *ast.Ident:
		if x.Obj == nil || x.Obj.Kind != ast.Var {
			return nil, false
		}
		switch d := x.Obj.Decl.(type) {
		case *ast.AssignStmt:
			idx := identIndex(d.Lhs, x.Name)
			if idx < 0 {
				return nil, false
			}
			if len(d.Rhs) == 1 {
				if u, ok := d.Rhs[0].(*ast.UnaryExpr); ok && u.Op == token.RANGE {
					return s.rangeValues(f, u.X, idx, "", depth+1)
				}
			}
			if len(d.Rhs) == len(d.Lhs) {
				return s.valuesDepth(f, d.Rhs[idx], depth+1)
			}
		case *ast.ValueSpec:
			idx := identIndex(namesAsExprs(d.Names), x.Name)
			if idx >= 0 && idx < len(d.Values) {
				return s.valuesDepth(f, d.Values[idx], depth+1)
			}
		}
	case *ast.SelectorExpr:
		// e.name where e ranges over a literal slice of structs
		id, ok := x.X.(*ast.Ident)
		if !ok || id.Obj == nil || id.Obj.Kind != ast.Var {
			return nil, false
		}
		d, ok := id.Obj.Decl.(*ast.AssignStmt)
		if !ok || len(d.Rhs) != 1 {
			return nil, false
		}
		u, ok := d.Rhs[0].(*ast.UnaryExpr)
		if !ok || u.Op != token.RANGE || identIndex(d.Lhs, id.Name) != 1 {
			return nil, false
		}
		return s.rangeValues(f, u.X, 1, x.Sel.Name, depth+1)
	}
	return nil, false
}

func namesAsExprs(ids []*ast.Ident) []ast.Expr {
	out := make([]ast.Expr, len(ids))
	for i, id := range ids {
		out[i] = id
	}
	return out
}

func identIndex(lhs []ast.Expr, name string) int {
	for i, e := range lhs {
		if id, ok := e.(*ast.Ident); ok && id.Name == name {
			return i
		}
	}
	return -1
}

// literalOf follows an identifier to the composite literal it was
// declared with.
func literalOf(e ast.Expr) *ast.CompositeLit {
	for i := 0; i < 10; i++ {
		switch x := e.(type) {
		case *ast.CompositeLit:
			return x
		case *ast.ParenExpr:
			e = x.X
		case *ast.Ident:
			if x.Obj == nil {
				return nil
			}
			switch d := x.Obj.Decl.(type) {
			case *ast.AssignStmt:
				idx := identIndex(d.Lhs, x.Name)
				if idx < 0 || len(d.Rhs) != len(d.Lhs) {
					return nil
				}
				e = d.Rhs[idx]
			case *ast.ValueSpec:
				idx := identIndex(namesAsExprs(d.Names), x.Name)
				if idx < 0 || idx >= len(d.Values) {
					return nil
				}
				e = d.Values[idx]
			default:
				return nil
			}
		default:
			return nil
		}
	}
	return nil
}

// rangeValues returns the values the key (idx 0) or value (idx 1) of a
// range over a literal map or slice takes; with field set, the values of
// that field of the struct elements.
func (s *source) rangeValues(f *srcFile, over ast.Expr, idx int, field string, depth int) ([]string, bool) {
	lit := literalOf(over)
	if lit == nil {
		return nil, false
	}
	var out []string
	switch typ := lit.Type.(type) {
	case *ast.MapType:
		for _, el := range lit.Elts {
			kv, ok := el.(*ast.KeyValueExpr)
			if !ok {
				return nil, false
			}
			e := kv.Key
			if idx == 1 {
				e = kv.Value
			}
			if field != "" {
				return nil, false
			}
			vs, ok := s.valuesDepth(f, e, depth+1)
			if !ok {
				return nil, false
			}
			out = append(out, vs...)
		}
	case *ast.ArrayType:
		if idx != 1 {
			return nil, false
		}
		fieldIdx := -1
		if field != "" {
			fieldIdx = s.fieldIndex(f, typ.Elt, field)
		}
		for _, el := range lit.Elts {
			if kv, ok := el.(*ast.KeyValueExpr); ok {
				el = kv.Value // an indexed element
			}
			if field == "" {
				vs, ok := s.valuesDepth(f, el, depth+1)
				if !ok {
					return nil, false
				}
				out = append(out, vs...)
				continue
			}
			cl, ok := el.(*ast.CompositeLit)
			if !ok {
				return nil, false
			}
			var fe ast.Expr
			for i, sub := range cl.Elts {
				if kv, ok := sub.(*ast.KeyValueExpr); ok {
					if k, ok := kv.Key.(*ast.Ident); ok && k.Name == field {
						fe = kv.Value
					}
				} else if i == fieldIdx {
					fe = sub
				}
			}
			if fe == nil {
				return nil, false
			}
			vs, ok := s.valuesDepth(f, fe, depth+1)
			if !ok {
				return nil, false
			}
			out = append(out, vs...)
		}
	default:
		return nil, false
	}
	return out, true
}

// fieldIndex is the position of a field in a struct type (a literal
// struct type or a type of the package), or -1.
func (s *source) fieldIndex(f *srcFile, typ ast.Expr, field string) int {
	var st *ast.StructType
	switch x := typ.(type) {
	case *ast.StructType:
		st = x
	case *ast.Ident:
		if ts, ok := f.pkg.types[x.Name]; ok {
			st, _ = ts.Type.(*ast.StructType)
		}
	case *ast.StarExpr:
		return -1
	}
	if st == nil {
		return -1
	}
	i := 0
	for _, fl := range st.Fields.List {
		if len(fl.Names) == 0 {
			i++
			continue
		}
		for _, n := range fl.Names {
			if n.Name == field {
				return i
			}
			i++
		}
	}
	return -1
}

// enclosingFunc names the function declaration holding a position.
func enclosingFunc(f *ast.File, p token.Pos) string {
	for _, d := range f.Decls {
		if fd, ok := d.(*ast.FuncDecl); ok && fd.Pos() <= p && p < fd.End() {
			return fd.Name.Name
		}
	}
	return ""
}

// found is a name the code defines, where, and what more the scan learnt.
