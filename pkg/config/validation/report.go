package validation

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/meshplane/istiod/pkg/config"
)

// Warning is a problem that does not reject an object. It is an error value so
// several can be joined; nil means no warnings.
type Warning = error

// ValidateFunc validates one object and returns its warnings and its error.
// Both may hold several problems joined together; each names its field path.
type ValidateFunc = func(cfg config.Config) (Warning, error)

// EmptyValidate accepts every object. Kinds without rules of their own use it.
func EmptyValidate(config.Config) (Warning, error) { return nil, nil }

// Path is a field path such as spec.http[0].route, built with Field and Index.
type Path string

// Field appends a field name.
func (p Path) Field(name string) Path {
	if p == "" {
		return Path(name)
	}
	return p + "." + Path(name)
}

// Index appends a list index.
func (p Path) Index(i int) Path { return p + "[" + Path(strconv.Itoa(i)) + "]" }

// Key appends a map key.
func (p Path) Key(k string) Path { return p + "[" + Path(k) + "]" }

// Problem is one validation finding: where, what, and for warnings an
// optional analyzer-style code (e.g. IST0151).
type Problem struct {
	Path Path
	Msg  string
	Code string
}

func (p *Problem) Error() string {
	msg := p.Msg
	if p.Code != "" {
		msg = p.Code + " " + msg
	}
	if p.Path == "" {
		return msg
	}
	return string(p.Path) + ": " + msg
}

// Report accumulates every problem of one object so all are reported at once.
type Report struct {
	errs  []error
	warns []error
}

// Errorf records an error at path.
func (r *Report) Errorf(path Path, format string, args ...any) {
	r.errs = append(r.errs, &Problem{Path: path, Msg: fmt.Sprintf(format, args...)})
}

// Warnf records a warning at path.
func (r *Report) Warnf(path Path, format string, args ...any) {
	r.warns = append(r.warns, &Problem{Path: path, Msg: fmt.Sprintf(format, args...)})
}

// WarnCode records a warning carrying an analyzer code such as IST0151.
func (r *Report) WarnCode(path Path, code, format string, args ...any) {
	r.warns = append(r.warns, &Problem{Path: path, Msg: fmt.Sprintf(format, args...), Code: code})
}

// Add records err at path when it is not nil (for helpers that return errors).
func (r *Report) Add(path Path, err error) {
	if err != nil {
		r.errs = append(r.errs, &Problem{Path: path, Msg: err.Error()})
	}
}

// Merge records the problems of o in r. With errorsAsWarnings, the errors
// of o become warnings of r: checks stricter than Istio's validation for
// the part of an object o covered (such as an EnvoyFilter patch of the
// WAYPOINT context, which Istio does not validate).
func (r *Report) Merge(o *Report, errorsAsWarnings bool) {
	r.warns = append(r.warns, o.warns...)
	if errorsAsWarnings {
		r.warns = append(r.warns, o.errs...)
		return
	}
	r.errs = append(r.errs, o.errs...)
}

// prefixErrors puts prefix in front of the message of every error recorded
// so far, as Istio does for the errors of some kinds ("invalid policy
// <name>.<namespace>: ").
func (r *Report) prefixErrors(prefix string) {
	for _, e := range r.errs {
		if p, ok := e.(*Problem); ok {
			p.Msg = prefix + p.Msg
		}
	}
}

// HasErrors reports whether any error was recorded.
func (r *Report) HasErrors() bool { return len(r.errs) > 0 }

// Result returns the joined warnings and errors (nil when none).
func (r *Report) Result() (Warning, error) {
	return errors.Join(r.warns...), errors.Join(r.errs...)
}

// Problems flattens a joined error into its single problems, for callers that
// print one per line.
func Problems(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, Problems(e)...)
		}
		return out
	}
	return []error{err}
}
