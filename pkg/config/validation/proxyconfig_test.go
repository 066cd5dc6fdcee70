package validation_test

import (
	"strings"
	"testing"

	"google.golang.org/protobuf/types/known/wrapperspb"
	networkingv1beta1 "istio.io/api/networking/v1beta1"
	typev1beta1 "istio.io/api/type/v1beta1"

	"github.com/meshplane/istiod/pkg/config/validation"
)

func TestValidateProxyConfig(t *testing.T) {
	cases := []secCase{
		{name: "valid", spec: &networkingv1beta1.ProxyConfig{
			Selector:             &typev1beta1.WorkloadSelector{MatchLabels: map[string]string{"app": "a"}},
			Concurrency:          wrapperspb.Int32(0),
			EnvironmentVariables: map[string]string{"ISTIO_META_X": "y"},
			Image:                &networkingv1beta1.ProxyImage{ImageType: "distroless"},
		}},
		{name: "custom image type", spec: &networkingv1beta1.ProxyConfig{
			Image: &networkingv1beta1.ProxyImage{ImageType: "centos"},
		}},
		{name: "typed nil", spec: (*networkingv1beta1.ProxyConfig)(nil)},
		{name: "wrong type", spec: &typev1beta1.WorkloadSelector{}, wantErr: []string{"cannot cast to ProxyConfig"}},
		{name: "negative concurrency", spec: &networkingv1beta1.ProxyConfig{Concurrency: wrapperspb.Int32(-1)},
			wantErr: []string{"spec.concurrency: concurrency must be greater than or equal to 0"}},
		{name: "bad image type", spec: &networkingv1beta1.ProxyConfig{
			Image: &networkingv1beta1.ProxyImage{ImageType: "debug:latest"},
		}, wantErr: []string{"spec.image.imageType: invalid image type \"debug:latest\""}},
		{name: "bad selector and env", spec: &networkingv1beta1.ProxyConfig{
			Selector:             &typev1beta1.WorkloadSelector{MatchLabels: map[string]string{"": "x"}},
			EnvironmentVariables: map[string]string{"": "x", "BIG": strings.Repeat("v", 2049)},
		}, wantErr: []string{
			"spec.selector.matchLabels: empty key is not supported in selector",
			"spec.environmentVariables[]: environment variable name may not be empty",
			"spec.environmentVariables[BIG]: environment variable value must be at most 2048 characters",
		}},
	}
	secRun(t, validation.ValidateProxyConfig, cases)
}
