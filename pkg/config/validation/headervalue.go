package validation

import (
	"errors"
	"fmt"
)

// Header values may hold Envoy's %VARIABLE% and %VARIABLE(args)%
// expressions; Envoy's header parser rejects a value it cannot parse, so
// the value is checked as that parser reads it: literal text, "%%" for a
// percent sign, "%NAME%", or "%NAME(" arguments ")%" where the arguments
// are either a bare string or a JSON array of strings, with spaces allowed
// around the array, its elements and the closing parenthesis. The errors
// carry Envoy's (and Istio's) wording.

type hvState int

const (
	hvLiteral   hvState = iota // plain text
	hvName                     // inside %NAME
	hvArgsStart                // after "(": "[" or a bare argument
	hvElemStart                // inside "[": a quoted element
	hvElem                     // inside an argument or a quoted element
	hvAfterElem                // after a quoted element: "," or "]"
	hvArgsEnd                  // after "]": ")"
	hvExprEnd                  // after ")": "%"
)

var (
	errHVUnescaped      = errors.New("invalid header configuration. Un-escaped %")
	errHVArrayDelimiter = errors.New("invalid header configuration. Expecting ',', ']', or whitespace")
	errHVQuote          = errors.New("invalid header configuration. Expecting '\"'")
	errHVBackslash      = errors.New("invalid header configuration. Un-terminated backslash in JSON string")
	// Envoy's message has its C++ format placeholders left unfilled.
	errHVParen   = errors.New("invalid header configuration. Expecting ')' or whitespace after '{}', but found '{}'")
	errHVPercent = errors.New("invalid header configuration. Expecting '%' or whitespace after")
)

// checkHeaderValueSyntax parses v as Envoy's header parser does.
func checkHeaderValueSyntax(v string) error {
	st := hvLiteral
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch st {
		case hvLiteral:
			if c != '%' {
				continue
			}
			if i+1 == len(v) {
				return errHVUnescaped
			}
			if v[i+1] == '%' {
				i++
				continue
			}
			st = hvName
		case hvName:
			switch c {
			case '%':
				st = hvLiteral
			case '(':
				st = hvArgsStart
			}
		case hvArgsStart:
			switch {
			case c == '[':
				st = hvElemStart
			case c != ' ':
				st = hvElem
			}
		case hvElemStart:
			switch {
			case c == '"':
				st = hvElem
			case c != ' ':
				return errHVQuote
			}
		case hvElem:
			switch c {
			case '\\':
				if i+1 == len(v) {
					return errHVBackslash
				}
				i++
			case ')':
				st = hvExprEnd
			case '"':
				st = hvAfterElem
			}
		case hvAfterElem:
			switch {
			case c == ',':
				st = hvElemStart
			case c == ']':
				st = hvArgsEnd
			case c != ' ':
				return errHVArrayDelimiter
			}
		case hvArgsEnd:
			switch {
			case c == ')':
				st = hvExprEnd
			case c != ' ':
				return errHVParen
			}
		case hvExprEnd:
			switch {
			case c == '%':
				st = hvLiteral
			case c != ' ':
				return errHVPercent
			}
		}
	}
	if st != hvLiteral {
		return fmt.Errorf("invalid header configuration. Un-terminated variable expression '%s'", v)
	}
	return nil
}
