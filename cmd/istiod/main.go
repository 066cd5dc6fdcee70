package main

import (
	"os"
	"path/filepath"

	"github.com/meshplane/istiod/cmd/istiod/app"
)

func main() {
	// a link or copy named pilot-discovery answers to that name
	name := "istiod"
	if len(os.Args) > 0 && filepath.Base(os.Args[0]) == "pilot-discovery" {
		name = "pilot-discovery"
	}
	os.Exit(app.MainAs(name, os.Args[1:], os.Stdout, os.Stderr))
}
