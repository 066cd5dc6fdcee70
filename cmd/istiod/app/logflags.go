package app

import (
	"io"

	"github.com/spf13/pflag"

	"github.com/meshplane/istiod/pkg/log"
)

// logOptions are Istio's logging flags (its pkg/log AttachCobraFlags, and
// the rotation flags it had before it stopped rotating logs itself, which
// Deployments still pass).
type logOptions struct {
	levels      string
	stackLevels string
	callers     string
	json        bool
	targets     []string
	rotate      string
	maxAge      int
	maxSize     int
	maxBackups  int
}

func defaultLogOptions() logOptions {
	return logOptions{
		levels:      "default:info",
		stackLevels: "default:none",
		targets:     []string{"stdout"},
		maxAge:      log.DefaultRotationMaxAge,
		maxSize:     log.DefaultRotationMaxSize,
		maxBackups:  log.DefaultRotationMaxBackups,
	}
}

const levelList = "[debug, info, warn, error, fatal, none]"

func addLogFlags(fs *pflag.FlagSet, lo *logOptions) {
	fs.StringVar(&lo.levels, "log_output_level", lo.levels, "Comma-separated minimum per-scope logging level of messages to output, "+
		"in the form of <scope>:<level>,<scope>:<level>,... where scope is a scope name or all and level can be one of "+levelList)
	fs.StringVar(&lo.stackLevels, "log_stacktrace_level", lo.stackLevels, "Comma-separated minimum per-scope logging level at which "+
		"stack traces are captured, in the form of <scope>:<level>,<scope:level>,... where level can be one of "+levelList)
	fs.StringVar(&lo.callers, "log_caller", lo.callers, "Comma-separated list of scopes for which to include caller information (all: every scope)")
	fs.BoolVar(&lo.json, "log_as_json", lo.json, "Whether to format output as JSON or in plain console-friendly format")
	fs.StringArrayVar(&lo.targets, "log_target", lo.targets, "The set of paths where to output the log. "+
		"This can be any path as well as the special values stdout and stderr")
	fs.StringVar(&lo.rotate, "log_rotate", lo.rotate, "The path for the optional rotating log file")
	fs.IntVar(&lo.maxAge, "log_rotate_max_age", lo.maxAge, "The maximum age in days of a log file beyond which the file is rotated (0 indicates no limit)")
	fs.IntVar(&lo.maxSize, "log_rotate_max_size", lo.maxSize, "The maximum size in megabytes of a log file beyond which the file is rotated")
	fs.IntVar(&lo.maxBackups, "log_rotate_max_backups", lo.maxBackups,
		"The maximum number of log file backups to keep before older files are deleted (0 indicates no limit)")
}

// configure applies the options; "stdout" and "stderr" are the command's.
func (lo *logOptions) configure(stdout, stderr io.Writer) error {
	return log.Configure(lo.options(stdout, stderr))
}

func (lo *logOptions) options(stdout, stderr io.Writer) log.Options {
	return log.Options{
		OutputLevels:       lo.levels,
		StackTraceLevels:   lo.stackLevels,
		LogCallers:         lo.callers,
		JSON:               lo.json,
		OutputPaths:        lo.targets,
		RotateOutputPath:   lo.rotate,
		RotationMaxAge:     lo.maxAge,
		RotationMaxSize:    lo.maxSize,
		RotationMaxBackups: lo.maxBackups,
		Stdout:             stdout,
		Stderr:             stderr,
	}
}
