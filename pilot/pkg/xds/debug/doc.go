// Package debug serves istiod's /debug endpoints: Istio 1.31's, each in the
// shape of Istio's answer — the config store (configz, resourcesz), mesh
// config, collections (krtz), the registries (registryz, endpointShardz,
// clusterz, networkz, mcsz, ambientz), the xDS views (adsz, syncz,
// connections, config_dump, edsz, ecdsz, ndsz, sidecarz, instancesz,
// cachez, push_status, pushcontext, authorizationz, telemetryz), inject
// and list — and ours (warningz, connectionz, indexz, pushz, policyz,
// proxytelemetryz, ca); and the debug types istioctl asks for over ADS
// (istio.io/debug/syncz, istio.io/debug/config_dump, istio.io/debug). The
// views read copies of the server's state, never its internals.
package debug
