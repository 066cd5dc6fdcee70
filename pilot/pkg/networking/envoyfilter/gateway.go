package envoyfilter

import (
	"slices"

	networking "istio.io/api/networking/v1alpha3"
)

// GatewayPorts builds PatchContext.GatewayPorts for a router proxy from
// the servers behind each of its route configurations (by route name), as
// Istio builds its gateway port map: the port of each route name ("http.8080"
// → 8080, "https.443.<port name>.<gateway>.<namespace>" → 443) maps to the
// port numbers of its servers.
func GatewayPorts(serversByRoute map[string][]*networking.Server) map[int][]int {
	out := make(map[int][]int, len(serversByRoute))
	for name, servers := range serversByRoute {
		port, _, _ := parseGatewayRouteName(name)
		ports := out[port]
		if ports == nil {
			ports = []int{}
		}
		for _, s := range servers {
			if s.GetPort() == nil {
				continue
			}
			if n := int(s.GetPort().GetNumber()); !slices.Contains(ports, n) {
				ports = append(ports, n)
			}
		}
		slices.Sort(ports)
		out[port] = ports
	}
	return out
}
