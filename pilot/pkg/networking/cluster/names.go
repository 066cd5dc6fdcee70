package cluster

import (
	"strconv"
	"strings"
)

// Well-known cluster names.
const (
	BlackHole          = "BlackHoleCluster"
	Passthrough        = "PassthroughCluster"
	InboundPassthrough = "InboundPassthroughCluster"
)

// Direction of a cluster.
type Direction string

// Directions.
const (
	Outbound Direction = "outbound"
	Inbound  Direction = "inbound"
)

// SubsetKey builds a cluster name: direction|port|subset|hostname.
func SubsetKey(d Direction, subset, hostname string, port int) string {
	return string(d) + "|" + strconv.Itoa(port) + "|" + subset + "|" + hostname
}

// ParseSubsetKey splits a cluster name built by SubsetKey.
func ParseSubsetKey(key string) (d Direction, subset, hostname string, port int, ok bool) {
	parts := strings.SplitN(key, "|", 4)
	if len(parts) != 4 {
		return "", "", "", 0, false
	}
	p, err := strconv.Atoi(parts[1])
	if err != nil {
		return "", "", "", 0, false
	}
	return Direction(parts[0]), parts[2], parts[3], p, true
}

// SNI is the server name Istio's mTLS uses for a cluster:
// outbound_.<port>_.<subset>_.<hostname>.
func SNI(subset, hostname string, port int) string {
	return "outbound_." + strconv.Itoa(port) + "_." + subset + "_." + hostname
}

// ParseSNI splits a cluster name built by SNI (the SNI-DNAT clusters of
// AUTO_PASSTHROUGH gateways).
func ParseSNI(name string) (subset, hostname string, port int, ok bool) {
	rest, found := strings.CutPrefix(name, "outbound_.")
	if !found {
		return "", "", 0, false
	}
	parts := strings.SplitN(rest, "_.", 3)
	if len(parts) != 3 {
		return "", "", 0, false
	}
	p, err := strconv.Atoi(parts[0])
	if err != nil {
		return "", "", 0, false
	}
	return parts[1], parts[2], p, true
}
