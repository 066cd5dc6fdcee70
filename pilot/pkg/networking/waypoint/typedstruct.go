package waypoint

import "github.com/meshplane/istiod/pkg/protoconv"

// typedStruct packs the config of a filter Envoy's Go types do not know
// (Istio's own extensions), once.
var typedStruct = protoconv.TypedStruct
