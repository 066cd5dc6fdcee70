package workloadapi_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/bufbuild/protocompile"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/meshplane/istiod/pkg/workloadapi"
	"github.com/meshplane/istiod/pkg/workloadapi/security"
	"github.com/meshplane/istiod/tests/istiobin"
	"github.com/meshplane/istiod/tests/refdata"
)

// Istio's workload API files, relative to <module>/pkg (their import root:
// authorization.proto imports "workloadapi/workload.proto").
const (
	istioWorkloadProto = "workloadapi/workload.proto"
	istioAuthzProto    = "workloadapi/security/authorization.proto"
)

// istioProtoRoot returns <istio.io/istio module>/pkg in the Go module cache,
// at the version tests/istiobin pins. A missing module fails the test, or
// skips it when refdata.SkipEnv is 1.
func istioProtoRoot(t *testing.T) string {
	t.Helper()
	version := istiobin.Version
	if v := os.Getenv(istiobin.VersionEnv); v != "" {
		version = v
	}
	cache := os.Getenv("GOMODCACHE")
	if cache == "" {
		out, err := exec.Command("go", "env", "GOMODCACHE").Output()
		if err != nil {
			t.Fatalf("go env GOMODCACHE: %v", err)
		}
		cache = strings.TrimSpace(string(out))
	}
	root := filepath.Join(cache, "istio.io", "istio@"+version, "pkg")
	if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(istioWorkloadProto))); err != nil {
		msg := fmt.Sprintf("the source of istio.io/istio@%s is not in the module cache (%v); run "+
			"`go mod download istio.io/istio@%s` (make testbin leaves it there)", version, err, version)
		if os.Getenv(refdata.SkipEnv) == "1" {
			t.Skipf("%s (%s=1)", msg, refdata.SkipEnv)
		}
		t.Fatalf("%s, or set %s=1 to skip", msg, refdata.SkipEnv)
	}
	return root
}

// compile parses files with protocompile; resolve finds their sources.
func compile(t *testing.T, resolve protocompile.Resolver, files ...string) []protoreflect.FileDescriptor {
	t.Helper()
	c := protocompile.Compiler{Resolver: protocompile.WithStandardImports(resolve)}
	res, err := c.Compile(context.Background(), files...)
	if err != nil {
		t.Fatalf("compiling %s: %v", strings.Join(files, ", "), err)
	}
	fds := make([]protoreflect.FileDescriptor, len(res))
	for i, f := range res {
		fds[i] = f
	}
	return fds
}

// TestWireCompatibleWithIstio compares every declaration of our generated
// descriptors with Istio's .proto files: messages, fields (name, number,
// kind, cardinality, JSON name, presence, packing, message or enum type),
// oneofs, maps, nested types, enum values and reserved numbers and names.
// Only the file names, imports, go_package and comments may differ.
func TestWireCompatibleWithIstio(t *testing.T) {
	root := istioProtoRoot(t)
	istio := compile(t, &protocompile.SourceResolver{ImportPaths: []string{root}}, istioWorkloadProto, istioAuthzProto)
	ours := []protoreflect.FileDescriptor{
		workloadapi.File_pkg_workloadapi_workload_proto,
		security.File_pkg_workloadapi_security_authorization_proto,
	}
	for i := range ours {
		t.Run(string(ours[i].Package()), func(t *testing.T) {
			for _, d := range diffFiles(istio[i], ours[i]) {
				t.Error(d)
			}
		})
	}
}

// TestDiffFilesSeesChanges makes sure the comparison is not vacuous: Istio's
// file with one field renumbered, one enum value added, one field made
// repeated, one reserved number dropped and one field's type changed differs
// in exactly those places, and in no other.
func TestDiffFilesSeesChanges(t *testing.T) {
	root := istioProtoRoot(t)
	src, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(istioWorkloadProto)))
	if err != nil {
		t.Fatal(err)
	}
	edited := string(src)
	for _, r := range [][2]string{
		{"string uid = 20;", "string uid = 28;"},
		{"  TLS = 5;\n", "  TLS = 5;\n  QUIC = 6;\n"},
		{"string region = 1;", "repeated string region = 1;"},
		{"reserved 15;", ""},
		{"repeated Port ports = 1;", "repeated Locality ports = 1;"},
	} {
		if !strings.Contains(edited, r[0]) {
			t.Fatalf("Istio's %s no longer contains %q: update this test", istioWorkloadProto, r[0])
		}
		edited = strings.Replace(edited, r[0], r[1], 1)
	}
	orig := compile(t, &protocompile.SourceResolver{ImportPaths: []string{root}}, istioWorkloadProto)[0]
	changed := compile(t, &protocompile.SourceResolver{Accessor: protocompile.SourceAccessorFromMap(
		map[string]string{istioWorkloadProto: edited})}, istioWorkloadProto)[0]
	got := diffFiles(orig, changed)
	want := []string{
		"istio.workload.Workload.uid: field number 20 here, 28 in ours",
		"istio.workload.Workload: field 28 (uid) only in ours",
		"istio.workload.Workload: field 20 (uid) missing from ours",
		"istio.workload.Workload: reserved numbers [15-15] here, [] in ours",
		"istio.workload.Locality.region: cardinality optional here, repeated in ours",
		"istio.workload.AppProtocol: value QUIC = 6 only in ours",
		"istio.workload.PortList.ports: type istio.workload.Port here, istio.workload.Locality in ours",
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("differences reported:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// diffFiles lists every difference between Istio's file a and ours b that
// a peer on the wire could notice.
func diffFiles(a, b protoreflect.FileDescriptor) []string {
	var d differ
	if a.Package() != b.Package() {
		d.addf("%s: proto package %s here, %s in ours", a.Path(), a.Package(), b.Package())
	}
	if a.Syntax() != b.Syntax() {
		d.addf("%s: syntax %s here, %s in ours", a.Path(), a.Syntax(), b.Syntax())
	}
	d.messages(string(a.Package()), a.Messages(), b.Messages())
	d.enums(string(a.Package()), a.Enums(), b.Enums())
	if a.Services().Len() != b.Services().Len() || a.Extensions().Len() != b.Extensions().Len() {
		d.addf("%s: %d services and %d extensions here, %d and %d in ours", a.Path(),
			a.Services().Len(), a.Extensions().Len(), b.Services().Len(), b.Extensions().Len())
	}
	return d.out
}

type differ struct{ out []string }

func (d *differ) addf(format string, args ...any) {
	d.out = append(d.out, fmt.Sprintf(format, args...))
}

func (d *differ) messages(scope string, a, b protoreflect.MessageDescriptors) {
	for i := range a.Len() {
		ma := a.Get(i)
		mb := b.ByName(ma.Name())
		if mb == nil {
			d.addf("%s: message %s missing from ours", scope, ma.FullName())
			continue
		}
		d.message(ma, mb)
	}
	for i := range b.Len() {
		if a.ByName(b.Get(i).Name()) == nil {
			d.addf("%s: message %s only in ours", scope, b.Get(i).FullName())
		}
	}
}

func (d *differ) message(a, b protoreflect.MessageDescriptor) {
	name := a.FullName()
	if a.IsMapEntry() != b.IsMapEntry() {
		d.addf("%s: map entry %v here, %v in ours", name, a.IsMapEntry(), b.IsMapEntry())
	}
	for i := range a.Fields().Len() {
		fa := a.Fields().Get(i)
		fb := b.Fields().ByNumber(fa.Number())
		if fb == nil {
			d.addf("%s: field %d (%s) missing from ours", name, fa.Number(), fa.Name())
			continue
		}
		d.field(fa, fb)
	}
	for i := range b.Fields().Len() {
		fb := b.Fields().Get(i)
		if a.Fields().ByNumber(fb.Number()) == nil {
			d.addf("%s: field %d (%s) only in ours", name, fb.Number(), fb.Name())
		}
		if fa := a.Fields().ByName(fb.Name()); fa != nil && fa.Number() != fb.Number() {
			d.addf("%s.%s: field number %d here, %d in ours", name, fb.Name(), fa.Number(), fb.Number())
		}
	}
	oneofs := func(m protoreflect.MessageDescriptor) []string {
		var s []string
		for i := range m.Oneofs().Len() {
			o := m.Oneofs().Get(i)
			var fields []string
			for j := range o.Fields().Len() {
				fields = append(fields, fmt.Sprintf("%s=%d", o.Fields().Get(j).Name(), o.Fields().Get(j).Number()))
			}
			slices.Sort(fields)
			s = append(s, fmt.Sprintf("%s(synthetic=%v){%s}", o.Name(), o.IsSynthetic(), strings.Join(fields, ",")))
		}
		slices.Sort(s)
		return s
	}
	if oa, ob := oneofs(a), oneofs(b); !slices.Equal(oa, ob) {
		d.addf("%s: oneofs %v here, %v in ours", name, oa, ob)
	}
	if ra, rb := fieldRanges(a.ReservedRanges()), fieldRanges(b.ReservedRanges()); !slices.Equal(ra, rb) {
		d.addf("%s: reserved numbers %v here, %v in ours", name, ra, rb)
	}
	if ra, rb := names(a.ReservedNames()), names(b.ReservedNames()); !slices.Equal(ra, rb) {
		d.addf("%s: reserved names %v here, %v in ours", name, ra, rb)
	}
	if ra, rb := fieldRanges(a.ExtensionRanges()), fieldRanges(b.ExtensionRanges()); !slices.Equal(ra, rb) {
		d.addf("%s: extension ranges %v here, %v in ours", name, ra, rb)
	}
	d.messages(string(name), a.Messages(), b.Messages())
	d.enums(string(name), a.Enums(), b.Enums())
}

func (d *differ) field(a, b protoreflect.FieldDescriptor) {
	name := fmt.Sprintf("%s.%s", a.Parent().FullName(), a.Name())
	check := func(what string, x, y any) {
		if x != y {
			d.addf("%s: %s %v here, %v in ours", name, what, x, y)
		}
	}
	check("name", a.Name(), b.Name())
	check("kind", a.Kind(), b.Kind())
	check("cardinality", a.Cardinality(), b.Cardinality())
	check("JSON name", a.JSONName(), b.JSONName())
	check("presence", a.HasPresence(), b.HasPresence())
	check("packed", a.IsPacked(), b.IsPacked())
	check("map", a.IsMap(), b.IsMap())
	check("type", typeName(a), typeName(b))
	check("oneof", oneofName(a), oneofName(b))
	check("default", a.HasDefault(), b.HasDefault())
}

func (d *differ) enums(scope string, a, b protoreflect.EnumDescriptors) {
	for i := range a.Len() {
		ea := a.Get(i)
		eb := b.ByName(ea.Name())
		if eb == nil {
			d.addf("%s: enum %s missing from ours", scope, ea.FullName())
			continue
		}
		for j := range ea.Values().Len() {
			va := ea.Values().Get(j)
			vb := eb.Values().ByName(va.Name())
			switch {
			case vb == nil:
				d.addf("%s: value %s = %d missing from ours", ea.FullName(), va.Name(), va.Number())
			case va.Number() != vb.Number():
				d.addf("%s: value %s = %d here, %d in ours", ea.FullName(), va.Name(), va.Number(), vb.Number())
			}
		}
		for j := range eb.Values().Len() {
			if vb := eb.Values().Get(j); ea.Values().ByName(vb.Name()) == nil {
				d.addf("%s: value %s = %d only in ours", ea.FullName(), vb.Name(), vb.Number())
			}
		}
		if ra, rb := enumRanges(ea.ReservedRanges()), enumRanges(eb.ReservedRanges()); !slices.Equal(ra, rb) {
			d.addf("%s: reserved numbers %v here, %v in ours", ea.FullName(), ra, rb)
		}
		if ra, rb := names(ea.ReservedNames()), names(eb.ReservedNames()); !slices.Equal(ra, rb) {
			d.addf("%s: reserved names %v here, %v in ours", ea.FullName(), ra, rb)
		}
		if ea.IsClosed() != eb.IsClosed() {
			d.addf("%s: closed %v here, %v in ours", ea.FullName(), ea.IsClosed(), eb.IsClosed())
		}
	}
	for i := range b.Len() {
		if a.ByName(b.Get(i).Name()) == nil {
			d.addf("%s: enum %s only in ours", scope, b.Get(i).FullName())
		}
	}
}

func typeName(f protoreflect.FieldDescriptor) protoreflect.FullName {
	switch {
	case f.Message() != nil:
		return f.Message().FullName()
	case f.Enum() != nil:
		return f.Enum().FullName()
	}
	return ""
}

func oneofName(f protoreflect.FieldDescriptor) protoreflect.Name {
	if o := f.ContainingOneof(); o != nil {
		return o.Name()
	}
	return ""
}

// fieldRanges prints message ranges, which are [start, end), as inclusive.
func fieldRanges(l protoreflect.FieldRanges) []string {
	var s []string
	for i := range l.Len() {
		s = append(s, fmt.Sprintf("%d-%d", l.Get(i)[0], l.Get(i)[1]-1))
	}
	slices.Sort(s)
	return s
}

// enumRanges prints enum ranges, which are inclusive.
func enumRanges(l protoreflect.EnumRanges) []string {
	var s []string
	for i := range l.Len() {
		s = append(s, fmt.Sprintf("%d-%d", l.Get(i)[0], l.Get(i)[1]))
	}
	slices.Sort(s)
	return s
}

func names(l protoreflect.Names) []string {
	var s []string
	for i := range l.Len() {
		s = append(s, string(l.Get(i)))
	}
	slices.Sort(s)
	return s
}
