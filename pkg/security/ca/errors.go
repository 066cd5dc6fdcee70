package ca

import (
	"errors"

	"google.golang.org/grpc/codes"
)

// ErrorType classifies a signing failure, as Istio's caerror.ErrType.
type ErrorType int

const (
	// CANotReady: there is no signing material.
	CANotReady ErrorType = iota
	// CSRError: the CSR could not be decoded, parsed or its signature checked.
	CSRError
	// TTLError: the requested TTL is over the maximum.
	TTLError
	// CertGenError: the certificate could not be made (expired signer, ...).
	CertGenError
)

// Error is a signing failure with its type. Its message is the underlying
// error's, as Istio's.
type Error struct {
	Type ErrorType
	Err  error
}

func newError(t ErrorType, err error) *Error { return &Error{Type: t, Err: err} }

func (e *Error) Error() string { return e.Err.Error() }

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }

// Label is the value of the error label of citadel_server_csr_sign_err_count:
// CA_NOT_READY, CSR_ERROR, TTL_ERROR, CERT_GEN_ERROR.
func (e *Error) Label() string {
	switch e.Type {
	case CANotReady:
		return "CA_NOT_READY"
	case CSRError:
		return "CSR_ERROR"
	case TTLError:
		return "TTL_ERROR"
	case CertGenError:
		return "CERT_GEN_ERROR"
	}
	return "UNKNOWN"
}

// Code is the gRPC code Istio answers with: InvalidArgument for a bad CSR or
// TTL, Internal otherwise.
func (e *Error) Code() codes.Code {
	switch e.Type {
	case CSRError, TTLError:
		return codes.InvalidArgument
	}
	return codes.Internal
}

// AsError returns the *Error in err's chain, if any.
func AsError(err error) (*Error, bool) {
	var e *Error
	ok := errors.As(err, &e)
	return e, ok
}
