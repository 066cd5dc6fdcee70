package app

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/meshplane/istiod/pkg/version"
)

func newVersionCommand() *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			info := version.Get()
			switch output {
			case "", "short":
				fmt.Fprintln(cmd.OutOrStdout(), info.Version)
			case "json":
				b, _ := json.MarshalIndent(info, "", "  ")
				fmt.Fprintln(cmd.OutOrStdout(), string(b))
			case "long":
				fmt.Fprintln(cmd.OutOrStdout(), info.String())
			default:
				return fmt.Errorf("unknown output %q (short, long, json)", output)
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "short, long or json")
	return cmd
}
