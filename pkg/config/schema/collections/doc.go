// Package collections holds the Schema of every kind and the sets the
// control plane works with: Pilot, PilotGatewayAPI(), GatewayAPI, Builtin, All.
package collections
