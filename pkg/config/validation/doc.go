// Package validation holds the rules for every Pilot kind: Validate<Kind>
// functions that return all the warnings and errors of one object at once,
// each naming its field path (e.g. spec.http[0].route). The kind registry
// binds each kind to its function by name at generation time; kinds without
// rules use EmptyValidate.
//
// Each problem Istio's validation also reports carries Istio's reason text
// verbatim after the field path (scripts grep for those texts), with what
// is ours, if anything, around it; the admission webhook, `istiod validate`
// and /debug/warningz all print these messages. istio_messages*_test.go
// holds Istio's texts and inputs that produce them, and
// tests/validationparity checks them against istioctl itself.
package validation
