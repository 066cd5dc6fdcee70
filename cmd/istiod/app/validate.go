package app

import (
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/meshplane/istiod/pilot/pkg/config/file"
	"github.com/meshplane/istiod/pilot/pkg/config/kube/crd"
	"github.com/meshplane/istiod/pilot/pkg/networking/envoyfilter"
	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/config/analysis"
	"github.com/meshplane/istiod/pkg/config/mesh"
	"github.com/meshplane/istiod/pkg/config/validation"
	"github.com/meshplane/istiod/pkg/diag"
)

func newValidateCommand() *cobra.Command {
	var files []string
	var domain, meshFile string
	cmd := &cobra.Command{
		Use:   "validate -f FILE|DIR ...",
		Short: "Parse and validate configuration files offline",
		Long: `Parse and validate Istio and Gateway API objects from files or directories
(recursively, *.yaml, *.yml, *.json; "-" reads standard input). Every error and
warning is printed as "file:line kind namespace/name: message", line being
where the object's document starts in the file (line numbers inside YAML
syntax errors count from the start of the file too). As istioctl
validate, an object with an unknown field is rejected (the running istiod
drops the field and says so on /debug/warningz). The valid objects are then
analysed together as istiod analyses them (Sidecar, Telemetry and EnvoyFilter-order checks with
istioctl analyze's IST codes, and ours); each finding is printed as
"analysis: <level> [<code>] (<kind> <namespace>/<name>) <message>" and counted
as a warning. The exit code is 1 when any object is rejected, 0 otherwise.`,
		Args: filesByFlag,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if len(files) == 0 {
				return fmt.Errorf("at least one -f FILE|DIR is required")
			}
			m := mesh.DefaultMeshConfig()
			if meshFile != "" {
				b, err := os.ReadFile(meshFile)
				if err != nil {
					fmt.Fprintln(cmd.ErrOrStderr(), "error:", err)
					return exitError{code: 1}
				}
				if m, _, err = mesh.ApplyMeshConfig(string(b), m); err != nil {
					fmt.Fprintln(cmd.ErrOrStderr(), "error: --meshConfig:", err)
					return exitError{code: 1}
				}
			}
			res, err := validateInputs(files, domain, cmd.InOrStdin(), cmd.OutOrStdout())
			if err == nil {
				for _, msg := range analysis.Analyze(res.configs, m) {
					fmt.Fprintf(cmd.OutOrStdout(), "analysis: %s\n", msg)
					res.warnings++
				}
				for _, p := range envoyfilter.Analyze(res.configs) {
					where := p.Object()
					if f := p.Field(); f != "" {
						where += " " + f
					}
					level := map[diag.Severity]string{diag.Error: "Error", diag.Warning: "Warning"}[p.Severity]
					fmt.Fprintf(cmd.OutOrStdout(), "analysis: %s [%s] (%s) %s\n", level, p.Code, where, p.Message)
					res.warnings++
				}
				for _, msg := range ignoredPolicies(res.configs, m) {
					fmt.Fprintf(cmd.OutOrStdout(), "analysis: %s\n", msg)
					res.warnings++
				}
			}
			if err != nil {
				fmt.Fprintln(cmd.ErrOrStderr(), "error:", err)
				return exitError{code: 1}
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "%d objects valid, %d rejected, %d warnings, %d unknown kinds\n",
				res.valid, res.rejected, res.warnings, res.unknown)
			if res.rejected > 0 {
				return exitError{code: 1}
			}
			return nil
		},
	}
	cmd.Flags().StringSliceVarP(&files, "filename", "f", nil, "file or directory to validate (repeatable, \"-\" for stdin)")
	cmd.Flags().StringVar(&domain, "domain", "cluster.local", "DNS domain suffix")
	cmd.Flags().StringVar(&meshFile, "meshConfig", "", "mesh config file the analysis uses (default: the mesh defaults)")
	return cmd
}

// filesByFlag rejects positional arguments: files are given with -f, as
// with istioctl validate.
func filesByFlag(_ *cobra.Command, args []string) error {
	if len(args) > 0 {
		return fmt.Errorf("unexpected argument %q: give files and directories with -f (istiod validate -f %s)", args[0], args[0])
	}
	return nil
}

type validateResult struct {
	valid, rejected, warnings, unknown int
	// configs are the valid objects, for the analysis
	configs []config.Config
}

func validateInputs(paths []string, domain string, stdin io.Reader, out io.Writer) (validateResult, error) {
	var res validateResult
	var named []string
	useStdin := false
	for _, p := range paths {
		if p == "-" {
			useStdin = true
		} else {
			named = append(named, p)
		}
	}
	inputs, err := file.ListInputs(named)
	if err != nil {
		return res, err
	}
	check := func(name string, data []byte) {
		for _, d := range crd.Parse(data, crd.Options{Validate: true, Domain: domain}) {
			where := fmt.Sprintf("%s:%d %s", name, d.Line, d.Object())
			for _, p := range d.Dropped {
				fmt.Fprintf(out, "%s: error: unknown field %q\n", where, p)
			}
			for _, w := range d.Warnings {
				fmt.Fprintf(out, "%s: warning: %v\n", where, w)
				res.warnings++
			}
			switch {
			case d.Err == nil && len(d.Dropped) > 0:
				res.rejected++
			case d.Err != nil:
				for _, e := range validation.Problems(d.Err) {
					fmt.Fprintf(out, "%s: error: %v\n", where, e)
				}
				res.rejected++
			case d.Unknown != nil:
				fmt.Fprintf(out, "%s: warning: unknown kind %s, skipped\n", where, d.Unknown.GroupVersionKind())
				res.unknown++
			default:
				res.valid++
				if d.Config != nil {
					res.configs = append(res.configs, *d.Config)
				}
			}
		}
	}
	for _, name := range inputs {
		data, err := os.ReadFile(name)
		if err != nil {
			return res, err
		}
		check(name, data)
	}
	if useStdin {
		data, err := io.ReadAll(stdin)
		if err != nil {
			return res, err
		}
		check("<stdin>", data)
	}
	return res, nil
}
