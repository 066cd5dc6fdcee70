// Package mesh owns the mesh-wide configuration of istiod: the MeshConfig and
// MeshNetworks defaults of Istio 1.31, the rules for applying user YAML on top
// of them, the sources that YAML comes from, and the live watchers that turn
// those sources into the configuration the rest of the control plane reads.
//
// # Applying YAML
//
// ApplyMeshConfig overlays a YAML document on a copy of a base config. A
// top-level field present in the YAML replaces the base value (an explicit
// null leaves it alone); nested messages and lists are replaced whole. Four
// fields merge instead, as Istio does: defaultConfig is merged field by field
// (its proxyMetadata map key by key, its proxyHeaders sub-messages one by one),
// defaultProviders field by field, extensionProviders by name (a provider with
// a known name replaces that provider, a new name is appended), and
// trustDomainAliases as a sorted union. Unknown fields are ignored, as in
// Istio, but never silently: their paths come back in Warnings. Type and enum
// mistakes fail with the field path. The result is validated; validation
// errors fail, validation warnings (such as an unusable extension provider)
// come back in Warnings.
//
// # Sources and precedence
//
// A Source yields the raw YAML text of one place (a file, a ConfigMap key) or
// nil when that place is missing. Sources(...) implements istiod's choice:
//
//   - the mesh file exists:         [shared ConfigMap, file]
//   - no file, a Kubernetes client: [shared ConfigMap, primary ConfigMap]
//   - neither:                      [] (defaults, with a recorded warning)
//
// Sources are applied in order on top of DefaultMeshConfig, so a later
// source wins. The SHARED_MESH_CONFIG ConfigMap is therefore applied FIRST and
// the primary source (file or the istio[-<revision>] ConfigMap) overrides it:
// the shared map supplies mesh-wide values, the install-owned config has the
// final word. This is the order of Istio's bootstrap (toSources returns
// {user, base} "User configuration is applied first"). When the file exists
// the primary ConfigMap is not read at all.
//
// # Watchers
//
// Watcher recomputes the MeshConfig whenever a source reports a change. With
// a single source a failing document keeps the last good config; with several
// sources a failing source is skipped and the others still apply (Istio keeps
// this inconsistency for backwards compatibility, istio/istio#54615). Every
// failure is logged at WARN naming the source and listed by Errors until the
// source is fixed; dropped fields and validation warnings of the active config
// are listed by Warnings. Mesh handlers run only when the result differs
// (proto.Equal) from the previous one.
//
// NetworksWatcher does the same for MeshNetworks, except that the first
// present source wins outright (no merging) and a failing document always
// keeps the last good value.
//
// Watchers hold no goroutine: they recompute on the goroutine that reported
// the change and call handlers there, serialised, in registration order. A
// FileSource owns one goroutine (fsnotify, debounce, periodic resync) that
// ends when its stop channel closes or Close is called. Time is read from an
// injectable Clock.
package mesh
