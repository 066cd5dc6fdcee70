package gateway

import (
	"sort"
	"strconv"
	"strings"

	"google.golang.org/protobuf/proto"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/meshplane/istiod/pkg/config/protocol"
)

// IsTLSServer tells a server that speaks TLS other than HTTPS redirect
// (a TLS block on an HTTP server only asks for the redirect).
func IsTLSServer(s *networking.Server) bool {
	return s.GetTls() != nil && !protocol.Parse(s.GetPort().GetProtocol()).IsHTTP()
}

// IsPassthrough tells a server whose TLS the gateway does not terminate.
func IsPassthrough(s *networking.Server) bool {
	switch s.GetTls().GetMode() {
	case networking.ServerTLSSettings_PASSTHROUGH, networking.ServerTLSSettings_AUTO_PASSTHROUGH:
		return s.GetTls() != nil
	}
	return false
}

// IsHTTPSTerminated tells an HTTPS server whose TLS the gateway terminates.
func IsHTTPSTerminated(s *networking.Server) bool {
	return s.GetTls() != nil && protocol.Parse(s.GetPort().GetProtocol()) == protocol.HTTPS && !IsPassthrough(s)
}

// IsHTTPServer tells a server that ends in an HTTP connection manager:
// plain HTTP, or HTTPS the gateway terminates.
func IsHTTPServer(s *networking.Server) bool {
	p := protocol.Parse(s.GetPort().GetProtocol())
	return p.IsHTTP() || (p == protocol.HTTPS && !IsPassthrough(s))
}

// IsTCPTerminated tells a TLS (not HTTPS) server whose TLS the gateway
// terminates before proxying TCP.
func IsTCPTerminated(s *networking.Server) bool {
	if IsPassthrough(s) {
		return false
	}
	p := protocol.Parse(s.GetPort().GetProtocol())
	return !p.IsHTTP() && p != protocol.HTTPS
}

// sanitizeHosts rewrites a server's hosts as the merge keeps them: "./h"
// becomes "<namespace>/h", "*/h" becomes "h", "*/*" alone becomes "*". The
// server is copied when a host changes.
func sanitizeHosts(s *networking.Server, namespace string) *networking.Server {
	var hosts []string
	changed := false
	for _, h := range s.Hosts {
		ns, name, scoped := strings.Cut(h, "/")
		switch {
		case !scoped:
			hosts = append(hosts, h)
		case ns == ".":
			hosts, changed = append(hosts, namespace+"/"+name), true
		case ns == "*" && name == "*":
			hosts, changed = []string{"*"}, true
		case ns == "*":
			hosts, changed = append(hosts, name), true
		default:
			hosts = append(hosts, h)
		}
	}
	if !changed {
		return s
	}
	out := proto.Clone(s).(*networking.Server)
	out.Hosts = hosts
	return out
}

// SNIHosts are the names a TLS server's filter chain matches: its hosts
// without namespace, sorted and unique.
func SNIHosts(s *networking.Server) []string {
	if s.GetTls() == nil {
		return nil
	}
	seen := map[string]bool{}
	var out []string
	for _, h := range s.Hosts {
		if _, name, scoped := strings.Cut(h, "/"); scoped {
			h = name
		}
		if !seen[h] {
			seen[h] = true
			out = append(out, h)
		}
	}
	sort.Strings(out)
	return out
}

// TakeHosts returns the hosts already taken on the same bind; when there
// are none, the hosts are taken. Servers take their TLS hosts when merged,
// and the TLS routes of router listeners take their SNI hosts with it.
func TakeHosts(hosts []string, bind string, taken map[string]string) []string {
	var dup []string
	for _, h := range hosts {
		if b, ok := taken[h]; ok && b == bind {
			dup = append(dup, h)
		}
	}
	if len(dup) == 0 {
		for _, h := range hosts {
			taken[h] = bind
		}
	}
	return dup
}

func sortStrings(s []string) { sort.Strings(s) }

func quote(s string) string { return strconv.Quote(s) }

func joinQuoted(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = strconv.Quote(s)
	}
	return strings.Join(q, ", ")
}
