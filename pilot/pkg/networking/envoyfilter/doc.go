// Package envoyfilter applies EnvoyFilter patches to the Envoy resources
// the other networking packages generate, as Istio 1.31's istiod applies
// them, last, on copies. It owns:
//
//   - conversion of each EnvoyFilter into patches (Compile): the patch value
//     decoded into the Envoy type its applyTo names, with typed_config Any
//     values resolved among the Envoy and Istio extension types linked by
//     types.gen.go; proxy version regexes compiled; operations that Istio
//     turns into ADD (INSERT_* outside filters and routes) turned into ADD;
//     values checked once (Problems name the patch index);
//   - selection and order for one proxy (Select, Compiler.Patches): the
//     EnvoyFilters of the root namespace and of the proxy's namespace that
//     select it (workloadSelector, or targetRefs for Gateway API gateways),
//     the patches whose proxy match holds, ordered as Istio 1.31 orders them
//     (priority; at equal priority the root namespace first; creation time;
//     name.namespace — not "root namespace first" as the EnvoyFilter
//     reference reads; pkg/config/analysis warns where the two differ,
//     MP0004), with a Key that identifies the set;
//   - the patching itself, one call per xDS type (PatchListeners,
//     PatchClusters, PatchRoutes, ExtensionConfigs), each resource in the
//     context Istio patches it in (SIDECAR_INBOUND, SIDECAR_OUTBOUND or
//     GATEWAY); a caller that patches a proxy's resources in parts (parts
//     cached per Key) sets PatchContext.SkipAdds and appends
//     AddedListeners and AddedClusters once;
//   - analysis: what istioctl analyze reports for EnvoyFilters (Analyze:
//     IST0133, IST0151 to IST0155) and, beyond Istio, pairs of patches of one
//     proxy whose result depends on their order (Conflicts).
//
// Consistency contract: inputs are never modified. Listeners, clusters and
// route configurations passed in may be shared with other proxies; a
// resource no patch changes is returned as the same pointer, and a changed
// one is a new message that shares every unchanged sub-message with its
// input and may share sub-messages with the compiled patches. Results are
// therefore read-only too: callers marshal them, they never modify them.
//
// A patch whose result fails the Envoy type's own validation (ValidateAll)
// is not applied to that resource, which keeps the rest of its patches;
// the Problem says which patch, which resource and why. Istio applies such
// a patch and the proxy rejects the whole response.
//
// Out of scope: BOOTSTRAP patches (istiod serves no bootstrap; Istio 1.31's
// istiod applies none either), the WAYPOINT context (no waypoint config is
// generated here; such patches match nothing, as in Istio's sidecar and
// gateway paths), and targetRefs naming a Service, ServiceEntry or
// GatewayClass (waypoint attachment).
//
// The package is pure: no I/O, no clock, no globals beyond the linked
// protobuf types. Compiler is a memo its owner keeps; it holds no goroutine.
package envoyfilter
