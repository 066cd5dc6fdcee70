package main

import (
	"os"

	"github.com/meshplane/istiod/cmd/istiod/app"
)

func main() {
	os.Exit(app.Main(os.Args[1:], os.Stdout, os.Stderr))
}
