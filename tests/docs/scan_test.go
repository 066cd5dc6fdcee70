package docs

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
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
type found struct {
	name   string
	where  string
	kind   string   // metric type, when known
	labels []string // metric labels, when known (nil: unknown)
	known  bool     // labels were read
}

// dynamic is a read the scan could not resolve to names.
type dynamic struct {
	where string // path:line
	key   string // path:function, the allowlist key
}

// isSelector reports whether e is pkg.name for the local name of an import
// path in f.
func isSelector(f *srcFile, e ast.Expr, path string, names ...string) (string, bool) {
	sel, ok := e.(*ast.SelectorExpr)
	if !ok {
		return "", false
	}
	id, ok := sel.X.(*ast.Ident)
	if !ok || id.Obj != nil || f.imports[id.Name] != path {
		return "", false
	}
	for _, n := range names {
		if sel.Sel.Name == n {
			return n, true
		}
	}
	return "", false
}

// envReads scans packages for os.Getenv / os.LookupEnv (and syscall's)
// calls, and for those functions passed as a value to a function of the
// module (`bootstrap.UserStateDir(os.Getenv, ...)`): then the calls of that
// parameter in the function's body are the reads. Any other use of them
// (assigned, passed on where the scan cannot follow) is dynamic.
func (s *source) envReads(pkgs []*srcPkg) (map[string][]found, []dynamic) {
	out := map[string][]found{}
	var dyn []dynamic
	isGetenv := func(f *srcFile, e ast.Expr) bool {
		_, isOS := isSelector(f, e, "os", "Getenv", "LookupEnv")
		_, isSys := isSelector(f, e, "syscall", "Getenv")
		return isOS || isSys
	}
	for _, p := range pkgs {
		for _, f := range p.files {
			handled := map[ast.Expr]bool{}
			addDyn := func(at token.Pos) {
				dyn = append(dyn, dynamic{where: s.pos(f, at), key: f.path + ":" + enclosingFunc(f.ast, at)})
			}
			record := func(rf *srcFile, call *ast.CallExpr) {
				where := s.pos(rf, call.Pos())
				vs, ok := s.values(rf, call.Args[0])
				if !ok {
					dyn = append(dyn, dynamic{where: where, key: rf.path + ":" + enclosingFunc(rf.ast, call.Pos())})
					return
				}
				for _, v := range vs {
					out[v] = append(out[v], found{name: v, where: where})
				}
			}
			ast.Inspect(f.ast, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				if isGetenv(f, call.Fun) {
					handled[call.Fun] = true
					if len(call.Args) > 0 {
						record(f, call)
					}
					return true
				}
				for i, a := range call.Args {
					if !isGetenv(f, a) {
						continue
					}
					handled[a] = true
					calls, ok := s.paramCalls(f, call.Fun, i)
					if !ok {
						addDyn(a.Pos())
						continue
					}
					for _, c := range calls {
						record(c.file, c.call)
					}
				}
				return true
			})
			ast.Inspect(f.ast, func(n ast.Node) bool {
				if e, ok := n.(ast.Expr); ok && !handled[e] && isGetenv(f, e) {
					addDyn(e.Pos())
				}
				return true
			})
		}
	}
	return out, dyn
}

type paramCall struct {
	file *srcFile
	call *ast.CallExpr
}

// paramCalls finds the function a call names (a function of the same
// package, or pkg.Func of a module package) and returns the calls its body
// makes of its parameter number i. ok is false when the function cannot be
// found or the parameter is used otherwise than called.
func (s *source) paramCalls(f *srcFile, fun ast.Expr, i int) ([]paramCall, bool) {
	var p *srcPkg
	var name string
	switch x := fun.(type) {
	case *ast.Ident:
		p, name = f.pkg, x.Name
	case *ast.SelectorExpr:
		id, ok := x.X.(*ast.Ident)
		if !ok {
			return nil, false
		}
		ip, ok := f.imports[id.Name]
		if !ok || !strings.HasPrefix(ip, module+"/") {
			return nil, false
		}
		p, name = s.pkgs[strings.TrimPrefix(ip, module+"/")], x.Sel.Name
	default:
		return nil, false
	}
	if p == nil {
		return nil, false
	}
	for _, pf := range p.files {
		for _, d := range pf.ast.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Recv != nil || fd.Name.Name != name || fd.Body == nil {
				continue
			}
			var param *ast.Ident
			k := 0
			for _, fl := range fd.Type.Params.List {
				for _, n := range fl.Names {
					if k == i {
						param = n
					}
					k++
				}
			}
			if param == nil || param.Obj == nil {
				return nil, false
			}
			var calls []paramCall
			ok = true
			ast.Inspect(fd.Body, func(n ast.Node) bool {
				switch x := n.(type) {
				case *ast.CallExpr:
					if id, isID := x.Fun.(*ast.Ident); isID && id.Obj == param.Obj {
						if len(x.Args) == 1 {
							calls = append(calls, paramCall{file: pf, call: x})
						}
						for _, a := range x.Args {
							ast.Inspect(a, func(m ast.Node) bool {
								if id, isID := m.(*ast.Ident); isID && id.Obj == param.Obj {
									ok = false
								}
								return true
							})
						}
						return false
					}
				case *ast.Ident:
					if x.Obj == param.Obj {
						ok = false // used otherwise than called
					}
				}
				return true
			})
			return calls, ok
		}
	}
	return nil, false
}

const promPath = "github.com/prometheus/client_golang/prometheus"

// metricDefs scans packages for the metrics they define with
// client_golang: the Name (with Namespace and Subsystem) of every
// prometheus.*Opts literal, and the first argument of prometheus.NewDesc;
// with the type and labels when the literal is passed to a constructor.
func (s *source) metricDefs(pkgs []*srcPkg) (map[string][]found, []dynamic) {
	out := map[string][]found{}
	var dyn []dynamic
	ctorKinds := map[string]string{
		"NewCounter": "counter", "NewCounterVec": "counter", "NewCounterFunc": "counter",
		"NewGauge": "gauge", "NewGaugeVec": "gauge", "NewGaugeFunc": "gauge",
		"NewHistogram": "histogram", "NewHistogramVec": "histogram",
		"NewSummary": "summary", "NewSummaryVec": "summary",
		"NewUntypedFunc": "untyped",
	}
	ctors := make([]string, 0, len(ctorKinds))
	for k := range ctorKinds {
		ctors = append(ctors, k)
	}
	for _, p := range pkgs {
		for _, f := range p.files {
			seen := map[*ast.CompositeLit]bool{}
			record := func(at ast.Node, names []string, ok bool, kind string, labels []string, known bool) {
				where := s.pos(f, at.Pos())
				if !ok {
					dyn = append(dyn, dynamic{where: where, key: f.path + ":" + enclosingFunc(f.ast, at.Pos())})
					return
				}
				for _, n := range names {
					out[n] = append(out[n], found{name: n, where: where, kind: kind, labels: labels, known: known})
				}
			}
			// constructors first, so that their literals carry type and labels
			ast.Inspect(f.ast, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok || len(call.Args) == 0 {
					return true
				}
				if _, isDesc := isSelector(f, call.Fun, promPath, "NewDesc"); isDesc {
					vs, ok := s.values(f, call.Args[0])
					var labels []string
					known := false
					if len(call.Args) > 2 {
						labels, known = s.stringList(f, call.Args[2])
					}
					record(call, vs, ok, "", labels, known)
					return true
				}
				ctor, ok := isSelector(f, call.Fun, promPath, ctors...)
				if !ok {
					return true
				}
				lit := optsLiteral(f, call.Args[0])
				if lit == nil {
					return true
				}
				seen[lit] = true
				names, ok := s.optsName(f, lit)
				var labels []string
				known := true
				if strings.HasSuffix(ctor, "Vec") {
					labels, known = s.stringList(f, call.Args[1])
				}
				record(lit, names, ok, ctorKinds[ctor], labels, known)
				return true
			})
			ast.Inspect(f.ast, func(n ast.Node) bool {
				lit, ok := n.(*ast.CompositeLit)
				if !ok || seen[lit] {
					return true
				}
				if _, ok := isSelector(f, lit.Type, promPath, "Opts", "CounterOpts", "GaugeOpts", "HistogramOpts", "SummaryOpts", "UntypedOpts"); !ok {
					return true
				}
				names, ok := s.optsName(f, lit)
				record(lit, names, ok, "", nil, false)
				return true
			})
		}
	}
	return out, dyn
}

// optsLiteral is the prometheus.*Opts literal a constructor argument is
// (possibly through &, or a local variable).
func optsLiteral(f *srcFile, e ast.Expr) *ast.CompositeLit {
	if u, ok := e.(*ast.UnaryExpr); ok && u.Op == token.AND {
		e = u.X
	}
	lit := literalOf(e)
	if lit == nil {
		return nil
	}
	if _, ok := isSelector(f, lit.Type, promPath, "Opts", "CounterOpts", "GaugeOpts", "HistogramOpts", "SummaryOpts", "UntypedOpts"); !ok {
		return nil
	}
	return lit
}

// optsName is the fully qualified name(s) of an Opts literal.
func (s *source) optsName(f *srcFile, lit *ast.CompositeLit) ([]string, bool) {
	parts := map[string][]string{"Namespace": {""}, "Subsystem": {""}, "Name": nil}
	for _, el := range lit.Elts {
		kv, ok := el.(*ast.KeyValueExpr)
		if !ok {
			return nil, false
		}
		k, ok := kv.Key.(*ast.Ident)
		if !ok {
			continue
		}
		if _, want := parts[k.Name]; !want {
			continue
		}
		vs, ok := s.values(f, kv.Value)
		if !ok {
			return nil, false
		}
		parts[k.Name] = vs
	}
	if parts["Name"] == nil {
		return nil, false
	}
	var out []string
	for _, ns := range parts["Namespace"] {
		for _, sub := range parts["Subsystem"] {
			for _, n := range parts["Name"] {
				var fq []string
				for _, x := range []string{ns, sub, n} {
					if x != "" {
						fq = append(fq, x)
					}
				}
				out = append(out, strings.Join(fq, "_"))
			}
		}
	}
	return out, true
}

// stringList reads a literal []string{...} (nil is an empty list).
func (s *source) stringList(f *srcFile, e ast.Expr) ([]string, bool) {
	if id, ok := e.(*ast.Ident); ok && id.Name == "nil" {
		return []string{}, true
	}
	lit := literalOf(e)
	if lit == nil {
		return nil, false
	}
	out := []string{}
	for _, el := range lit.Elts {
		v, ok := s.constValue(f.pkg, f, el, 0)
		if !ok {
			return nil, false
		}
		out = append(out, v)
	}
	return out, true
}

// handlerPaths scans packages for mux.Handle / mux.HandleFunc (and
// http.Handle / http.HandleFunc) calls and returns the patterns they
// register; a pattern that is not a constant is returned as dynamic.
func (s *source) handlerPaths(pkgs []*srcPkg) (map[string][]found, []dynamic) {
	out := map[string][]found{}
	var dyn []dynamic
	for _, p := range pkgs {
		for _, f := range p.files {
			ast.Inspect(f.ast, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok || len(call.Args) != 2 {
					return true
				}
				sel, ok := call.Fun.(*ast.SelectorExpr)
				if !ok || (sel.Sel.Name != "Handle" && sel.Sel.Name != "HandleFunc") {
					return true
				}
				where := s.pos(f, call.Pos())
				vs, ok := s.values(f, call.Args[0])
				if !ok {
					if stringLike(call.Args[0]) { // not slog's Handler.Handle(ctx, record)
						dyn = append(dyn, dynamic{where: where, key: f.path + ":" + enclosingFunc(f.ast, call.Pos())})
					}
					return true
				}
				for _, v := range vs {
					if strings.HasPrefix(v, "/") {
						out[v] = append(out[v], found{name: v, where: where})
					}
				}
				return true
			})
		}
	}
	return out, dyn
}

// stringLike reports whether an expression the scan cannot evaluate is
// still a string: a concatenation with a literal, a string parameter or
// variable, a call of fmt.Sprint*, path.Join or filepath.Join.
func stringLike(e ast.Expr) bool {
	switch x := e.(type) {
	case *ast.BasicLit:
		return x.Kind == token.STRING
	case *ast.ParenExpr:
		return stringLike(x.X)
	case *ast.BinaryExpr:
		return x.Op == token.ADD && (stringLike(x.X) || stringLike(x.Y))
	case *ast.Ident:
		if x.Obj == nil {
			return false
		}
		switch d := x.Obj.Decl.(type) {
		case *ast.Field:
			id, ok := d.Type.(*ast.Ident)
			return ok && id.Name == "string"
		case *ast.ValueSpec:
			if id, ok := d.Type.(*ast.Ident); ok {
				return id.Name == "string"
			}
			for _, v := range d.Values {
				if stringLike(v) {
					return true
				}
			}
		case *ast.AssignStmt:
			for _, v := range d.Rhs {
				if stringLike(v) {
					return true
				}
			}
		}
	case *ast.CallExpr:
		if sel, ok := x.Fun.(*ast.SelectorExpr); ok {
			if id, ok := sel.X.(*ast.Ident); ok {
				switch id.Name + "." + sel.Sel.Name {
				case "fmt.Sprint", "fmt.Sprintf", "path.Join", "filepath.Join":
					return true
				}
			}
		}
	}
	return false
}

// debugAdds scans the debug endpoints' package for the names its
// registration helpers are called with (d.add("configz", ...),
// d.addProxyReport("authorizationz", ...)): every method of Debug whose
// name starts with "add" and whose first argument is a string constant.
func (s *source) debugAdds(dir string) map[string][]found {
	out := map[string][]found{}
	p := s.pkgs[dir]
	if p == nil {
		return out
	}
	for _, f := range p.files {
		ast.Inspect(f.ast, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || len(call.Args) < 2 {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok || !strings.HasPrefix(sel.Sel.Name, "add") {
				return true
			}
			v, ok := s.constValue(p, f, call.Args[0], 0)
			if !ok || v == "" || strings.ContainsAny(v, " /") {
				return true
			}
			out["/debug/"+v] = append(out["/debug/"+v], found{name: "/debug/" + v, where: s.pos(f, call.Pos())})
			return true
		})
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// firstWhere summarises where a name is defined, for messages.
func firstWhere(fs []found) string {
	if len(fs) == 0 {
		return ""
	}
	if len(fs) == 1 {
		return fs[0].where
	}
	return fs[0].where + " and " + strconv.Itoa(len(fs)-1) + " more"
}

// whereMap turns scan results into name → where.
func whereMap(m map[string][]found) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = firstWhere(v)
	}
	return out
}

// exists reports whether a repository path exists.
func exists(path string) bool {
	_, err := os.Stat(filepath.Join(root, filepath.FromSlash(path)))
	return err == nil
}
