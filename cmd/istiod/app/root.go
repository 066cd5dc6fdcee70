package app

import (
	"io"

	"github.com/spf13/cobra"
)

// Main runs the command line with args and returns the process exit code.
func Main(args []string, stdout, stderr io.Writer) int {
	root := NewRootCommand(stdout, stderr)
	root.SetArgs(args)
	if err := root.Execute(); err != nil {
		if ee, ok := err.(exitError); ok {
			return ee.code
		}
		return 1
	}
	return 0
}

// exitError carries an exit code out of a command without printing usage.
type exitError struct{ code int }

func (e exitError) Error() string { return "exit" }

// NewRootCommand builds the istiod command tree.
func NewRootCommand(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:           "istiod",
		Short:         "Istio-compatible control plane",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.AddCommand(newDiscoveryCommand(), newValidateCommand(), newVersionCommand())
	return root
}
