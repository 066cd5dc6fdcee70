// Package log is the logging of the control plane: named scopes (default,
// model, ads, ...) each with its own level, configured from istio-style flags
// such as --log_output_level=default:info,model:debug, written as text or JSON
// through log/slog.
package log
