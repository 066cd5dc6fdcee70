package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/log"
	"github.com/meshplane/istiod/pkg/webhooks/admission"
)

var scope = log.RegisterScope("validationServer", "validation webhook server")

// RevisionLabel is the label naming the control plane revision an object
// belongs to.
const RevisionLabel = "istio.io/rev"

// ErrUnknownKind is returned (wrapped or not) by a Validator for a kind it
// does not know; such objects are allowed.
var ErrUnknownKind = errors.New("unknown kind")

// DecodeError is returned by a Validator for an object that does not decode
// into its kind (a wrong type, a malformed spec): it is denied as "error
// decoding configuration".
type DecodeError struct{ Err error }

func (e *DecodeError) Error() string { return e.Err.Error() }
func (e *DecodeError) Unwrap() error { return e.Err }

// Validator validates one object, the JSON of an admission request's object,
// of the kind gvk. It returns the warnings and, when the object is rejected,
// an error naming the field and the reason: ErrUnknownKind for a kind it does
// not know, a *DecodeError when the object cannot be decoded, any other error
// when the object is invalid.
type Validator func(gvk config.GroupVersionKind, raw []byte) (warnings []string, err error)

// Options configures the webhook.
type Options struct {
	// Validate is required.
	Validate Validator
	// Revision is this control plane's revision ("" or "default" for the
	// default one): an object labelled istio.io/rev with another revision
	// is allowed without validation, the other revision's webhook checks it.
	Revision string
}

// Webhook serves the validation admission webhook.
type Webhook struct {
	validate Validator
	revision string
}

// New returns the webhook.
func New(o Options) (*Webhook, error) {
	if o.Validate == nil {
		return nil, errors.New("validation webhook: no validator")
	}
	rev := o.Revision
	if rev == "" {
		rev = "default"
	}
	return &Webhook{validate: o.Validate, revision: rev}, nil
}

// Register installs the webhook on mux at the paths Istio serves it:
// /validate and /validate/.
func (wh *Webhook) Register(mux *http.ServeMux) {
	mux.Handle("/validate", wh)
	mux.Handle("/validate/", wh)
}

// validFields are the top-level fields an Istio object may have.
var validFields = map[string]bool{"apiVersion": true, "kind": true, "metadata": true, "spec": true, "status": true}

// ServeHTTP answers one AdmissionReview. Like Istio: an empty or too large
// body is 400, a content type other than application/json is 415, a body
// that is not an AdmissionReview is answered (200) with a denial saying so.
func (wh *Webhook) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := admission.ReadBody(r)
	if err != nil {
		reportHTTPError(http.StatusBadRequest)
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if len(body) == 0 {
		reportHTTPError(http.StatusBadRequest)
		http.Error(w, "no body found", http.StatusBadRequest)
		return
	}
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		reportHTTPError(http.StatusUnsupportedMediaType)
		http.Error(w, "invalid Content-Type, want `application/json`", http.StatusUnsupportedMediaType)
		return
	}

	out := admissionv1.AdmissionReview{TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"}}
	var in admissionv1.AdmissionReview
	switch err := admission.DecodeReview(body, &in); {
	case err != nil:
		out.Response = admission.Deny(fmt.Errorf("could not decode body: %v", err))
	default:
		out.TypeMeta = in.TypeMeta
		out.Response = wh.admit(in.Request)
		out.Response.UID = in.Request.UID
	}
	resp, err := json.Marshal(out)
	if err != nil {
		reportHTTPError(http.StatusInternalServerError)
		http.Error(w, fmt.Sprintf("could not encode response: %v", err), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if _, err := w.Write(resp); err != nil {
		reportHTTPError(http.StatusInternalServerError)
		scope.Warnf("could not write response: %v", err)
	}
}

// objectHeader is what the webhook reads of an object before validating it.
type objectHeader struct {
	metav1.TypeMeta `json:",inline"`
	Metadata        struct {
		Name      string            `json:"name"`
		Namespace string            `json:"namespace"`
		Labels    map[string]string `json:"labels"`
	} `json:"metadata"`
}

func (wh *Webhook) admit(req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	dryRun := req.DryRun != nil && *req.DryRun
	suffix := ""
	if dryRun {
		suffix = " (dry run)"
	}
	switch req.Operation {
	case admissionv1.Create, admissionv1.Update:
	default:
		scope.Warnf("Unsupported webhook operation %v%s", req.Operation, suffix)
		reportFailed(req, reasonUnsupportedOperation, dryRun)
		return &admissionv1.AdmissionResponse{Allowed: true}
	}

	var obj objectHeader
	if err := json.Unmarshal(req.Object.Raw, &obj); err != nil {
		scope.Infof("cannot decode configuration: %v%s", err, suffix)
		reportFailed(req, reasonYamlDecodeError, dryRun)
		return admission.Deny(fmt.Errorf("cannot decode configuration: %v", err))
	}
	if rev, ok := obj.Metadata.Labels[RevisionLabel]; ok && rev != wh.revision {
		scope.Debugf("%s %s/%s belongs to revision %q, not %q: not validated", obj.Kind, req.Namespace, obj.Metadata.Name, rev, wh.revision)
		return &admissionv1.AdmissionResponse{Allowed: true}
	}
	gv, _ := parseAPIVersion(obj.APIVersion)
	gvk := config.GroupVersionKind{Group: gv.group, Version: gv.version, Kind: obj.Kind}

	warnings, err := wh.validate(gvk, req.Object.Raw)
	var de *DecodeError
	switch {
	case errors.Is(err, ErrUnknownKind):
		scope.Infof("unrecognized type %v%s: allowed", gvk, suffix)
		reportFailed(req, reasonUnknownType, dryRun)
		return &admissionv1.AdmissionResponse{Allowed: true}
	case errors.As(err, &de):
		scope.Infof("error decoding configuration: %v%s", err, suffix)
		reportFailed(req, reasonCRDConversionError, dryRun)
		return admission.Deny(fmt.Errorf("error decoding configuration: %v", err))
	case err != nil:
		msg := invalidText(err)
		scope.Infof("configuration is invalid: %s%s", msg, suffix)
		reportFailed(req, reasonInvalidConfig, dryRun)
		return admission.Deny(fmt.Errorf("configuration is invalid: %s", msg))
	}
	if err := checkFields(req.Object.Raw, req.Kind.Kind, req.Namespace, obj.Metadata.Name); err != nil {
		scope.Infof("%v%s", err, suffix)
		reportFailed(req, reasonInvalidConfig, dryRun)
		return admission.Deny(err)
	}
	reportPassed(req)
	return &admissionv1.AdmissionResponse{Allowed: true, Warnings: warnings}
}

// invalidText words the problems of an invalid object as Istio's webhook
// does: one problem alone, several as the list hashicorp/go-multierror
// prints ("2 errors occurred:\n\t* a\n\t* b\n\n").
func invalidText(err error) string {
	problems := flatten(err)
	if len(problems) < 2 {
		return err.Error()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d errors occurred:", len(problems))
	for _, p := range problems {
		b.WriteString("\n\t* ")
		b.WriteString(p.Error())
	}
	b.WriteString("\n\n")
	return b.String()
}

// flatten returns the single errors of a joined error, in order.
func flatten(err error) []error {
	j, ok := err.(interface{ Unwrap() []error })
	if !ok {
		return []error{err}
	}
	var out []error
	for _, e := range j.Unwrap() {
		out = append(out, flatten(e)...)
	}
	return out
}

type groupVersion struct{ group, version string }

func parseAPIVersion(s string) (groupVersion, bool) {
	for i := 0; i < len(s); i++ {
		if s[i] == '/' {
			return groupVersion{s[:i], s[i+1:]}, true
		}
	}
	return groupVersion{version: s}, false
}

// checkFields rejects top-level fields an Istio object cannot have.
func checkFields(raw []byte, kind, namespace, name string) error {
	fields := map[string]json.RawMessage{}
	if err := json.Unmarshal(raw, &fields); err != nil {
		return fmt.Errorf("cannot decode configuration fields: %v", err)
	}
	for key := range fields {
		if !validFields[key] {
			return fmt.Errorf("unknown field %q on %s resource %s/%s", key, kind, namespace, name)
		}
	}
	return nil
}
