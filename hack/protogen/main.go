package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/bufbuild/protocompile"
	"github.com/bufbuild/protocompile/linker"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/pluginpb"
)

// defaultDirs are the directories whose .proto files are generated when no
// directory is named.
var defaultDirs = []string{"pkg/workloadapi"}

func main() {
	check := flag.Bool("check", false, "do not write; exit 1 if a generated file is missing, stale or orphaned")
	goCmd := flag.String("go", "go", "the go command that runs `go tool protoc-gen-go`")
	flag.Parse()
	dirs := flag.Args()
	if len(dirs) == 0 {
		dirs = defaultDirs
	}

	protos, err := findProtos(dirs)
	if err != nil {
		fail(err)
	}
	out, err := generate(context.Background(), protos, *goCmd)
	if err != nil {
		fail(err)
	}
	if *check {
		problems, err := compare(dirs, out)
		if err != nil {
			fail(err)
		}
		for _, p := range problems {
			fmt.Fprintln(os.Stderr, "protogen:", p)
		}
		if len(problems) > 0 {
			fmt.Fprintln(os.Stderr, "protogen: run `make gen`")
			os.Exit(1)
		}
		return
	}
	for _, name := range sortedKeys(out) {
		if err := os.WriteFile(filepath.FromSlash(name), out[name], 0o644); err != nil {
			fail(err)
		}
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "protogen:", err)
	os.Exit(2)
}

// findProtos returns the .proto files under dirs, slash-separated and
// relative to the working directory (the repository root), sorted.
func findProtos(dirs []string) ([]string, error) {
	var protos []string
	for _, dir := range dirs {
		err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.Type().IsRegular() && strings.HasSuffix(path, ".proto") {
				protos = append(protos, filepath.ToSlash(filepath.Clean(path)))
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	if len(protos) == 0 {
		return nil, fmt.Errorf("no .proto files under %s", strings.Join(dirs, ", "))
	}
	slices.Sort(protos)
	return slices.Compact(protos), nil
}

// generate compiles protos and returns the files protoc-gen-go makes of them,
// by slash-separated path relative to the repository root.
func generate(ctx context.Context, protos []string, goCmd string) (map[string][]byte, error) {
	req, err := request(ctx, protos)
	if err != nil {
		return nil, err
	}
	in, err := proto.Marshal(req)
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, goCmd, "tool", "protoc-gen-go")
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%s tool protoc-gen-go: %v\n%s", goCmd, err, stderr.Bytes())
	}
	resp := &pluginpb.CodeGeneratorResponse{}
	if err := proto.Unmarshal(stdout, resp); err != nil {
		return nil, fmt.Errorf("protoc-gen-go's response: %v", err)
	}
	if resp.Error != nil {
		return nil, fmt.Errorf("protoc-gen-go: %s", resp.GetError())
	}
	out := map[string][]byte{}
	for _, f := range resp.File {
		if f.GetInsertionPoint() != "" {
			return nil, fmt.Errorf("protoc-gen-go: unexpected insertion point %q in %s", f.GetInsertionPoint(), f.GetName())
		}
		name := f.GetName()
		if !filepath.IsLocal(filepath.FromSlash(name)) {
			return nil, fmt.Errorf("protoc-gen-go: output %q is outside the repository", name)
		}
		out[name] = []byte(f.GetContent())
	}
	return out, nil
}

// request parses protos (import paths relative to the repository root, plus
// the well-known google/protobuf files) and builds the plugin request:
// every file in dependency order, the named ones to generate, output paths
// beside the sources, and no compiler version.
func request(ctx context.Context, protos []string) (*pluginpb.CodeGeneratorRequest, error) {
	c := protocompile.Compiler{
		Resolver:       protocompile.WithStandardImports(&protocompile.SourceResolver{ImportPaths: []string{"."}}),
		SourceInfoMode: protocompile.SourceInfoStandard,
	}
	files, err := c.Compile(ctx, protos...)
	if err != nil {
		return nil, err
	}
	req := &pluginpb.CodeGeneratorRequest{
		FileToGenerate: protos,
		Parameter:      proto.String("paths=source_relative"),
	}
	seen := map[string]bool{}
	var add func(f protoreflect.FileDescriptor)
	add = func(f protoreflect.FileDescriptor) {
		if seen[f.Path()] {
			return
		}
		seen[f.Path()] = true
		imports := f.Imports()
		for i := range imports.Len() {
			add(imports.Get(i).FileDescriptor)
		}
		req.ProtoFile = append(req.ProtoFile, fileProto(f))
	}
	for _, f := range files {
		add(f)
	}
	for _, p := range protos {
		if !seen[p] {
			return nil, fmt.Errorf("%s: not compiled", p)
		}
	}
	return req, nil
}

// fileProto is the descriptor proto of f, with its source info (the
// comments protoc-gen-go copies into the Go code).
func fileProto(f protoreflect.FileDescriptor) *descriptorpb.FileDescriptorProto {
	if r, ok := f.(linker.Result); ok {
		return r.FileDescriptorProto()
	}
	return protodesc.ToFileDescriptorProto(f)
}

// compare reports how the generated files on disk differ from out: missing,
// stale, or *.pb.go files under dirs that nothing generates.
func compare(dirs []string, out map[string][]byte) ([]string, error) {
	var problems []string
	for _, name := range sortedKeys(out) {
		have, err := os.ReadFile(filepath.FromSlash(name))
		switch {
		case errors.Is(err, fs.ErrNotExist):
			problems = append(problems, name+" is missing")
		case err != nil:
			return nil, err
		case !bytes.Equal(have, out[name]):
			problems = append(problems, name+" is stale")
		}
	}
	for _, dir := range dirs {
		err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			name := filepath.ToSlash(filepath.Clean(path))
			if d.Type().IsRegular() && strings.HasSuffix(name, ".pb.go") && out[name] == nil {
				problems = append(problems, name+" is generated from no .proto")
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return problems, nil
}

func sortedKeys(m map[string][]byte) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
