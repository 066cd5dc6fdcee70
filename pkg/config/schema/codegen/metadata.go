package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"
)

// Resource is one entry of metadata.yaml.
type Resource struct {
	Kind               string   `json:"kind"`
	Identifier         string   `json:"identifier"`
	Plural             string   `json:"plural"`
	Group              string   `json:"group"`
	Version            string   `json:"version"`
	VersionAliases     []string `json:"versionAliases"`
	Proto              string   `json:"proto"`
	ProtoPackage       string   `json:"protoPackage"`
	StatusProto        string   `json:"statusProto"`
	StatusProtoPackage string   `json:"statusProtoPackage"`
	ClientPackage      string   `json:"clientPackage"`
	ClusterScoped      bool     `json:"clusterScoped"`
	Builtin            bool     `json:"builtin"`
	Synthetic          bool     `json:"synthetic"`
	Validate           string   `json:"validate"`
	Pilot              bool     `json:"pilot"`
	GatewayAPI         bool     `json:"gatewayAPI"`

	// derived
	ValidateExpr string `json:"-"`
}

// Metadata is the whole file.
type Metadata struct {
	Resources []*Resource `json:"resources"`
}

func loadMetadata(p string) (*Metadata, error) {
	raw, err := os.ReadFile(p)
	if err != nil {
		return nil, err
	}
	m := &Metadata{}
	if err := yaml.UnmarshalStrict(raw, m); err != nil {
		return nil, fmt.Errorf("%s: %v", p, err)
	}
	if err := m.check(); err != nil {
		return nil, fmt.Errorf("%s: %v", p, err)
	}
	sort.SliceStable(m.Resources, func(i, j int) bool { return m.Resources[i].Identifier < m.Resources[j].Identifier })
	return m, nil
}

func (m *Metadata) check() error {
	ids := map[string]bool{}
	gvks := map[string]bool{}
	for i, r := range m.Resources {
		if r.Kind == "" || r.Plural == "" || r.Version == "" || r.Proto == "" || r.ProtoPackage == "" {
			return fmt.Errorf("resources[%d] (%s): kind, plural, version, proto and protoPackage are required", i, r.Kind)
		}
		if r.Identifier == "" {
			r.Identifier = r.Kind
		}
		if ids[r.Identifier] {
			return fmt.Errorf("resources[%d]: identifier %q is not unique", i, r.Identifier)
		}
		ids[r.Identifier] = true
		for _, v := range append([]string{r.Version}, r.VersionAliases...) {
			k := r.Group + "/" + v + "/" + r.Kind
			if gvks[k] {
				return fmt.Errorf("resources[%d]: %s declared twice", i, k)
			}
			gvks[k] = true
		}
		if (r.StatusProto == "") != (r.StatusProtoPackage == "") {
			return fmt.Errorf("resources[%d] (%s): statusProto and statusProtoPackage go together", i, r.Kind)
		}
		if !r.Synthetic && r.ClientPackage == "" {
			return fmt.Errorf("resources[%d] (%s): clientPackage is required for stored kinds", i, r.Kind)
		}
	}
	return nil
}

// resolveValidators sets each kind's validation expression: the explicit
// validate field, else Validate<Kind> when the validation package has it,
// else validation.EmptyValidate.
func (m *Metadata) resolveValidators(funcs map[string]bool) {
	for _, r := range m.Resources {
		name := r.Validate
		if name == "" {
			name = "Validate" + r.Identifier
		}
		if funcs[name] {
			r.ValidateExpr = "validation." + name
		} else {
			r.ValidateExpr = "validation.EmptyValidate"
		}
	}
}

// isValidateFunc reports whether a function has the validation signature
// func(config.Config) (Warning, error).
func isValidateFunc(ft *ast.FuncType) bool {
	if ft.Params == nil || len(ft.Params.List) != 1 || len(ft.Params.List[0].Names) > 1 {
		return false
	}
	sel, ok := ft.Params.List[0].Type.(*ast.SelectorExpr)
	if !ok || sel.Sel.Name != "Config" {
		return false
	}
	if x, ok := sel.X.(*ast.Ident); !ok || x.Name != "config" {
		return false
	}
	return ft.Results != nil && ft.Results.NumFields() == 2
}

// exportedFuncs lists the exported top-level validation functions of a package directory.
func exportedFuncs(dir string) (map[string]bool, error) {
	fset := token.NewFileSet()
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, e := range entries {
		n := e.Name()
		if e.IsDir() || !strings.HasSuffix(n, ".go") || strings.HasSuffix(n, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path.Join(dir, n), nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		for _, d := range f.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv == nil && fd.Name.IsExported() && isValidateFunc(fd.Type) {
				out[fd.Name.Name] = true
			}
		}
	}
	return out, nil
}

// goType returns the Go type name of a proto/type reference: its last dotted segment.
func goType(proto string) string {
	return proto[strings.LastIndex(proto, ".")+1:]
}
