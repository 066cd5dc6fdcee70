package docs

import (
	"go/ast"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// The finders of the names the docs list: environment reads, metric
// definitions and HTTP handler paths, each with where it stands (the
// sources are read by scan_test.go).

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
