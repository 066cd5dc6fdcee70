package app

import (
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"
)

// Main runs the command line with args and returns the process exit code.
// An error is printed on stderr as "Error: ..."; a mistake in the command
// line (unknown command or flag, missing or extra argument, bad value) is
// followed by the command's usage hint.
func Main(args []string, stdout, stderr io.Writer) int {
	root := NewRootCommand(stdout, stderr)
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
	root := &cobra.Command{
		Use:   "istiod",
		Short: "Istio-compatible control plane",
		// Main prints errors (cobra would print usage on every error, a
		// server failure included)
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.AddCommand(newDiscoveryCommand(), newValidateCommand(), newVersionCommand())
	return root
}
