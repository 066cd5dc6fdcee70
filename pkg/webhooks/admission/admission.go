// Package admission holds what the injection and validation webhooks share
// of the AdmissionReview exchange: reading a bounded body, decoding the
// review and denying a request.
package admission

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// MaxRequestBodyBytes bounds an AdmissionReview body (Istio's limit).
const MaxRequestBodyBytes = int64(6 * 1024 * 1024)

// ReadBody reads a request body of at most MaxRequestBodyBytes.
func ReadBody(r *http.Request) ([]byte, error) {
	if r.Body == nil {
		return nil, nil
	}
	defer r.Body.Close()
	lr := &io.LimitedReader{R: r.Body, N: MaxRequestBodyBytes + 1}
	data, err := io.ReadAll(lr)
	if err != nil {
		return nil, fmt.Errorf("reading the body: %v", err)
	}
	if lr.N <= 0 {
		return nil, fmt.Errorf("request entity too large: limit is %d", MaxRequestBodyBytes)
	}
	return data, nil
}

// DecodeReview reads an AdmissionReview of admission.k8s.io/v1 or v1beta1
// (the same JSON) that carries a request.
func DecodeReview(body []byte, ar *admissionv1.AdmissionReview) error {
	if err := json.Unmarshal(body, ar); err != nil {
		return err
	}
	if ar.Kind != "AdmissionReview" || (ar.APIVersion != "admission.k8s.io/v1" && ar.APIVersion != "admission.k8s.io/v1beta1") {
		return fmt.Errorf("not an AdmissionReview of admission.k8s.io/v1 or v1beta1: apiVersion %q kind %q", ar.APIVersion, ar.Kind)
	}
	if ar.Request == nil {
		return errors.New("the AdmissionReview has no request")
	}
	return nil
}

// Deny is a response refusing the request with err's message.
func Deny(err error) *admissionv1.AdmissionResponse {
	return &admissionv1.AdmissionResponse{Result: &metav1.Status{Message: err.Error()}}
}
