package crdclient_test

import (
	"testing"

	istioscheme "istio.io/client-go/pkg/clientset/versioned/scheme"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	gatewayscheme "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned/scheme"

	"github.com/meshplane/istiod/pilot/pkg/config/kube/crdclient"
	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/config/schema/collections"
)

// kubeDecoder decodes objects as the informers receive them from the API
// server: Istio and Gateway API kinds into their client-go types.
var kubeDecoder = func() runtime.Decoder {
	s := runtime.NewScheme()
	if err := istioscheme.AddToScheme(s); err != nil {
		panic(err)
	}
	if err := gatewayscheme.AddToScheme(s); err != nil {
		panic(err)
	}
	return serializer.NewCodecFactory(s).UniversalDeserializer()
}()

// FuzzKubernetesObjects feeds arbitrary objects, decoded as the API server
// path decodes them, through the translation into config.Config, the kind's
// validation and the way back to a typed object: none may panic, whatever
// the input (the informers hand istiod what the CRD schemas let through,
// which is much more than validation accepts).
func FuzzKubernetesObjects(f *testing.F) {
	for _, s := range []string{
		`{"apiVersion":"networking.istio.io/v1","kind":"VirtualService","metadata":{"name":"a","namespace":"b"},"spec":{"hosts":["a"],"http":[{"match":[{"uri":{"regex":"(("}}],"route":[{"destination":{"host":"a"}}]}]}}`,
		`{"apiVersion":"networking.istio.io/v1","kind":"DestinationRule","metadata":{"name":"d"},"spec":{"host":"h","trafficPolicy":{"portLevelSettings":[{}]},"subsets":[{"name":""}]}}`,
		`{"apiVersion":"security.istio.io/v1","kind":"AuthorizationPolicy","metadata":{"name":"p"},"spec":{"action":"CUSTOM","rules":[{"when":[{"key":"request.auth.claims[","values":[]}]}]}}`,
		`{"apiVersion":"networking.istio.io/v1alpha3","kind":"EnvoyFilter","metadata":{"name":"e"},"spec":{"configPatches":[{"applyTo":"HTTP_FILTER","patch":{"operation":"MERGE","value":{"typed_config":{"@type":"x"}}}}]}}`,
		`{"apiVersion":"telemetry.istio.io/v1","kind":"Telemetry","metadata":{"name":"t"},"spec":{"metrics":[{"overrides":[{"tagOverrides":{"":{}}}]}]}}`,
		`{"apiVersion":"gateway.networking.k8s.io/v1","kind":"HTTPRoute","metadata":{"name":"r"},"spec":{"parentRefs":[{"name":""}],"rules":[{"matches":[{"path":{"type":"RegularExpression","value":"["}}]}]}}`,
		`{"apiVersion":"gateway.networking.k8s.io/v1","kind":"Gateway","metadata":{"name":"g"},"spec":{"gatewayClassName":"istio","listeners":[{"name":"l","port":0,"protocol":"HTTPS","tls":{"certificateRefs":[{}]}}]}}`,
		`{"apiVersion":"networking.istio.io/v1","kind":"ServiceEntry","metadata":{"name":"s"},"spec":{"hosts":["*"],"ports":[{"number":0}],"endpoints":[{"address":"unix://"}]}}`,
	} {
		f.Add([]byte(s))
	}
	schemas := collections.PilotGatewayAPI()
	f.Fuzz(func(t *testing.T, data []byte) {
		obj, gvk, err := kubeDecoder.Decode(data, nil, nil)
		if err != nil || gvk == nil {
			return
		}
		// informers watch the stored version of each kind: only its type
		// reaches the translation
		sch, ok := schemas.FindByGroupVersionKind(config.FromKubernetesGVK(*gvk))
		if !ok {
			return
		}
		cfg, err := crdclient.TranslateObject(obj, sch.GroupVersionKind(), "cluster.local")
		if err != nil {
			return
		}
		_, _ = sch.ValidateConfig(cfg)
		_ = cfg.DeepCopy()
		if cfg.Spec != nil {
			_, _ = crdclient.ToObject(cfg)
		}
	})
}
