// Package debug serves istiod's /debug endpoints: the config store
// (configz, resourcesz), mesh config, collections, problems (warningz), the
// registries (registryz, endpointShardz), and the xDS views (adsz, syncz,
// connections, config_dump, edsz, push_status, pushcontext, pushz,
// authorizationz, ca), which
// read copies of the server's state, never its internals.
package debug
