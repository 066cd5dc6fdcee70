// Package model is the control plane's view of the mesh: the config store
// interfaces every source implements, and (as they arrive) services, proxies,
// push requests and the PushContext snapshot.
package model
