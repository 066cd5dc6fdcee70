package differential

import "github.com/meshplane/istiod/pilot/pkg/xds/adsc"

// Types are the short names of the compared types, as Allowed.Type and
// the reports use them.
var Types = adsc.ShortTypes

// fetch is adsc.Fetch: every cluster, the endpoints of the EDS clusters,
// every listener, the route configurations the listeners name.
var fetch = adsc.Fetch
