package mesh

// Sources returns the mesh config sources in the order they are applied
// (later wins), following istiod's bootstrap:
//
//   - fileExists: [sharedCM, file] — the primary ConfigMap is not read at
//     all while the mesh file exists;
//   - otherwise, primaryCM != nil (a Kubernetes client exists):
//     [sharedCM, primaryCM];
//   - otherwise: nil, and the Watcher falls back to defaults with a warning.
//
// sharedCM is the SHARED_MESH_CONFIG ConfigMap (nil when unset). It is applied
// first so the install-owned primary config overrides it. It is only used
// with a Kubernetes client, i.e. it is dropped when there is neither a file
// nor primaryCM. If the file source cannot be created the failure is logged
// and the ConfigMap path is taken, as Istio does. opts go to NewFileSource
// (pass WithStop).
//
// The same function serves meshNetworks (with the networks file and
// ConfigMap key); NetworksWatcher then takes the first present source.
func Sources(file string, fileExists bool, primaryCM, sharedCM Source, opts ...Option) []Source {
	if fileExists {
		fs, err := NewFileSource(file, opts...)
		if err == nil {
			return withShared(fs, sharedCM)
		}
		buildOptions(opts).logger.Warn("cannot watch mesh file, falling back to ConfigMap", "file", file, "error", err)
	}
	if primaryCM == nil {
		return nil
	}
	return withShared(primaryCM, sharedCM)
}

// withShared puts the shared overlay before the primary source.
func withShared(primary, shared Source) []Source {
	if shared == nil {
		return []Source{primary}
	}
	return []Source{shared, primary}
}
