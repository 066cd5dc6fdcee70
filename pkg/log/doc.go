// Package log is the logging of the control plane: named scopes (default,
// model, ads, ...) each with its own level, stack trace level and caller
// setting, configured from Istio's logging flags (--log_output_level,
// --log_stacktrace_level, --log_caller, --log_target, --log_as_json,
// --log_rotate*), written in Istio's format
// ("<time>\t<level>\t<scope>\t<message>\t<key>=<value> ...", or Istio's
// JSON) by a log/slog Handler.
package log
