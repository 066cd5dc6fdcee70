package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
)

func main() {
	metadata := flag.String("metadata", "metadata.yaml", "path of metadata.yaml")
	root := flag.String("root", "../../..", "repository root")
	check := flag.Bool("check", false, "fail when a generated file differs instead of writing it")
	flag.Parse()

	if err := run(*metadata, *root, *check); err != nil {
		fmt.Fprintln(os.Stderr, "codegen:", err)
		os.Exit(1)
	}
}

func run(metadataPath, root string, check bool) error {
	m, err := loadMetadata(metadataPath)
	if err != nil {
		return err
	}
	validators, err := exportedFuncs(filepath.Join(root, "pkg/config/validation"))
	if err != nil {
		return err
	}
	m.resolveValidators(validators)

	files, err := render(m)
	if err != nil {
		return err
	}
	var stale []string
	for rel, content := range files {
		path := filepath.Join(root, rel)
		old, _ := os.ReadFile(path)
		if bytes.Equal(old, content) {
			continue
		}
		if check {
			stale = append(stale, rel)
			continue
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(path, content, 0o644); err != nil {
			return err
		}
	}
	if len(stale) > 0 {
		return fmt.Errorf("generated files are stale, run `make gen`: %v", stale)
	}
	return nil
}
