package patcher

import (
	"context"
	"fmt"
	"strings"

	networking "istio.io/api/networking/v1alpha3"
	clientnetworking "istio.io/client-go/pkg/apis/networking/v1"
	istioclient "istio.io/client-go/pkg/clientset/versioned"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// AlwaysRejectAnnotation is Istio's annotation its validation webhook
// always rejects; Istio's dry-run Gateway carries it.
const AlwaysRejectAnnotation = "internal.istio.io/webhook-always-reject"

// The API server's words Istio looks for in the dry run's error.
const (
	deniedFragment            = "denied the request"
	missingResourceFragment   = "the server could not find the requested resource"
	unsupportedDryRunFragment = "does not support dry run"
)

// DryRunInvalidGateway returns the check Istio makes before it switches the
// validation webhooks to fail closed: a server-side dry-run create (an
// update when one of that name exists) of an invalid Gateway (no servers,
// the always-reject annotation) in istiod's namespace, labelled with
// istiod's revision so that a webhook selecting the revision's objects (the
// chart's objectSelector) sees it. The webhook answers when the API server
// reports the denial. Without the Gateway kind, or when another webhook
// cannot take dry runs, the check cannot be made and, as in Istio, counts
// as passed. Otherwise it returns why not.
func DryRunInvalidGateway(client istioclient.Interface, namespace, revision string) func(context.Context) (bool, string) {
	if revision == "" {
		revision = "default"
	}
	return func(ctx context.Context) (bool, string) {
		gw := &clientnetworking.Gateway{
			ObjectMeta: metav1.ObjectMeta{Name: "invalid-gateway", Namespace: namespace,
				Labels:      map[string]string{RevisionLabel: revision},
				Annotations: map[string]string{AlwaysRejectAnnotation: "true"}},
			Spec: networking.Gateway{},
		}
		gws := client.NetworkingV1().Gateways(namespace)
		_, err := gws.Create(ctx, gw, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if apierrors.IsAlreadyExists(err) {
			_, err = gws.Update(ctx, gw, metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}})
		}
		switch {
		case err == nil:
			return false, "the dry run of an invalid Gateway was admitted"
		case strings.Contains(err.Error(), deniedFragment):
			return true, ""
		case strings.Contains(err.Error(), missingResourceFragment):
			scope.Warnf("no Gateway kind: the validation webhook cannot be checked; assuming it answers")
			return true, ""
		case strings.Contains(err.Error(), unsupportedDryRunFragment):
			scope.Warnf("a validating webhook does not support dry runs: the validation webhook cannot be checked; assuming it answers (%v)", err)
			return true, ""
		}
		return false, fmt.Sprintf("the dry run of an invalid Gateway was refused for another reason: %v", err)
	}
}
