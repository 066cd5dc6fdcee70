package differential

import (
	"fmt"
	"regexp"
	"strings"
)

// The sentinel is a ServiceEntry the harness creates after a case's
// objects, in the proxy's namespace, with a host of the case's own: a
// DNS cluster on TCP port sentinelPort (a cluster and a listener in both
// snapshots, the same in both). Seeing it in a snapshot tells that the
// control plane has read the case's objects, created before it; the
// confirmation poll covers the rest (see Run). A case's Sidecar must let
// the proxy see its own namespace ("./*").
const sentinelPort = 15999

var nonSlug = regexp.MustCompile(`[^a-z0-9]+`)

// sentinelHost is the sentinel's host for a case: its name as a DNS label.
func sentinelHost(caseName string) string {
	slug := strings.Trim(nonSlug.ReplaceAllString(strings.ToLower(caseName), "-"), "-")
	if len(slug) > 40 {
		slug = strings.Trim(slug[:40], "-")
	}
	return slug + ".sentinel.differential.test"
}

func sentinelObject(host, ns string) string {
	return fmt.Sprintf(`apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: differential-sentinel, namespace: %s}
spec:
  hosts: [%s]
  location: MESH_INTERNAL
  resolution: DNS
  ports: [{number: %d, name: tcp-sentinel, protocol: TCP}]
`, ns, host, sentinelPort)
}

func hasSentinel(s map[string]map[string]any, host string) bool {
	_, ok := s["cds"][fmt.Sprintf("outbound|%d||%s", sentinelPort, host)]
	return ok
}
