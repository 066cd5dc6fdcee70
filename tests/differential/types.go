package differential

// The envoyfilter package links every Envoy, xDS and Istio extension type
// (its generated types.gen.go), so that the typed configs of both control
// planes render here by name rather than as unresolved bytes.
import _ "github.com/meshplane/istiod/pilot/pkg/networking/envoyfilter"
