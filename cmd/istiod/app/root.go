package app

import (
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/meshplane/istiod/pilot/pkg/bootstrap"
)

// Main runs the command line with args and returns the process exit code.
// An error is printed on stderr as "Error: ..."; a mistake in the command
// line (unknown command or flag, missing or extra argument, bad value) is
// followed by the command's usage hint.
func Main(args []string, stdout, stderr io.Writer) int {
	return MainAs("istiod", args, stdout, stderr)
}

// MainAs is Main for a binary invoked as name (the base name of argv[0]):
// a copy or link named pilot-discovery, as Istio's image calls its
// binary, names itself so in its messages; the commands are the same
// (`pilot-discovery discovery ...`, `pilot-discovery request GET
// /debug/syncz`).
func MainAs(name string, args []string, stdout, stderr io.Writer) int {
	root := newRootCommand(name, stdout, stderr, runDiscovery)
	root.SetArgs(args)
	cmd, err := root.ExecuteC()
	return report(cmd, err, stderr)
}

// report prints err and returns the exit code for it.
func report(cmd *cobra.Command, err error, stderr io.Writer) int {
	if err == nil {
		return 0
	}
	var ee exitError
	if errors.As(err, &ee) {
		// the command has already said what went wrong
		return ee.code
	}
	fmt.Fprintf(stderr, "Error: %v\n", err)
	var re runError
	if !errors.As(err, &re) && cmd != nil {
		fmt.Fprintf(stderr, "Run '%s --help' for usage.\n", cmd.CommandPath())
	}
	return 1
}

// exitError carries an exit code out of a command that has printed its own
// report (e.g. the problems validate found): Main prints nothing more.
type exitError struct{ code int }

func (e exitError) Error() string { return "exit" }

// runError is a failure of a command that was given a well-formed command
// line (e.g. the server cannot start): Main prints it without a usage hint.
type runError struct{ err error }

func (e runError) Error() string { return e.err.Error() }
func (e runError) Unwrap() error { return e.err }

// NewRootCommand builds the istiod command tree.
func NewRootCommand(stdout, stderr io.Writer) *cobra.Command {
	return newRootCommand("istiod", stdout, stderr, runDiscovery)
}

// newRootCommand builds the tree named name; run is what discovery runs
// once its flags and environment are read (tests pass their own).
func newRootCommand(name string, stdout, stderr io.Writer, run func(bootstrap.PilotArgs) error) *cobra.Command {
	root := &cobra.Command{
		Use:   name,
		Short: "Istio-compatible control plane",
		// Main prints errors (cobra would print usage on every error, a
		// server failure included)
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.AddCommand(newDiscoveryCommand(run), newValidateCommand(), newVersionCommand(), newRequestCommand())
	return root
}
