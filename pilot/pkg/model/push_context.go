package model

// PushContext is the immutable snapshot a push is computed from. It is built
// from independent indexes (services, virtual services, destination rules,
// gateways, sidecar scopes, ...), each in its own file; an incremental update
// rebuilds only the indexes whose kinds changed.
//
// The indexes arrive with the push engine; until then the type only anchors
// PushRequest.Push.
type PushContext struct{}
