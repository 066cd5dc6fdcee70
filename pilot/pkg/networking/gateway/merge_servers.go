package gateway

import (
	"strconv"

	networking "istio.io/api/networking/v1alpha3"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/config/protocol"
)

// merger is the state of one Merge.
type merger struct {
	out *Merged
	// ports in use, plain-text servers by port, binds of TLS servers by
	// port, TLS hosts by port (host -> bind)
	used      map[uint32]bool
	plain     map[uint32]ServerPort
	tlsBinds  map[uint32]map[string]bool
	tlsHosts  map[uint32]map[string]string
	autoHosts map[string]bool
}

// Merge combines the servers of the candidates into one logical gateway,
// as Istio does:
//   - plain HTTP servers of a port (and bind) share the route
//     configuration http.<port>;
//   - TLS servers of a port are told apart by SNI; a host another TLS
//     server of the port already serves, on the same bind, drops the server;
//   - HTTPS servers keep their own route configuration, whose name must be
//     unique;
//   - a port cannot mix plain text and TLS, nor HTTP and another protocol,
//     on one bind: the later server is dropped.
//
// Every dropped server is in Problems.
func Merge(cands []Candidate, proxy *model.Proxy) *Merged {
	m := &merger{
		out: &Merged{Servers: map[ServerPort]*Servers{}, GatewayOf: map[*networking.Server]string{},
			ByRouteName: map[string][]*networking.Server{}, TLS: map[*networking.Server]*TLSInfo{},
			Credentials: map[string]bool{}},
		used: map[uint32]bool{}, plain: map[uint32]ServerPort{}, tlsBinds: map[uint32]map[string]bool{},
		tlsHosts: map[uint32]map[string]string{}, autoHosts: map[string]bool{},
	}
	for _, c := range cands {
		gw := c.Config.Spec.(*networking.Gateway)
		name := c.Config.Namespace + "/" + c.Config.Name
		for _, s := range gw.Servers {
			if s.GetPort() == nil {
				m.drop(name, s, 0, "the server has no port")
				continue
			}
			s = sanitizeHosts(s, c.Config.Namespace)
			m.out.GatewayOf[s] = name
			allowCredentials(m.out.Credentials, s, c.Config, proxy)
			for _, port := range listenPorts(s.Port.Number, c) {
				m.add(name, c.Config, s, port)
			}
		}
	}
	if len(m.autoHosts) > 0 {
		for h := range m.autoHosts {
			m.out.AutoPassthroughHosts = append(m.out.AutoPassthroughHosts, h)
		}
		sortStrings(m.out.AutoPassthroughHosts)
	}
	return m.out
}

func (m *merger) drop(gateway string, s *networking.Server, port uint32, reason string) {
	label := s.GetPort().GetName()
	if port != 0 {
		label += " (port " + strconv.Itoa(int(port)) + ")"
	}
	m.out.Problems = append(m.out.Problems, Problem{Gateway: gateway, Server: label, Reason: reason})
}

// add places one server on one listen port.
func (m *merger) add(gateway string, cfg *config.Config, s *networking.Server, port uint32) {
	route := RouteName(s, port, cfg)
	if s.Tls != nil {
		if m.tlsHosts[port] == nil {
			m.tlsHosts[port] = map[string]string{}
		}
		if dup := TakeHosts(s.Hosts, s.Bind, m.tlsHosts[port]); len(dup) > 0 {
			m.drop(gateway, s, port, "hosts "+joinQuoted(dup)+" are already served with TLS on this port")
			return
		}
		m.out.TLS[s] = &TLSInfo{SNIHosts: SNIHosts(s), RouteName: route}
		if s.Tls.Mode == networking.ServerTLSSettings_AUTO_PASSTHROUGH {
			for _, h := range s.Hosts {
				m.autoHosts[h] = true
			}
		}
	}
	sp := ServerPort{Number: port, Protocol: s.Port.Protocol, Bind: s.Bind}
	if !m.used[port] {
		m.used[port] = true
		m.addPlainOrFirst(s, sp, route)
		return
	}
	if cur, ok := m.plain[port]; ok {
		m.addBesidePlain(gateway, s, sp, cur, route)
		return
	}
	m.addBesideTLS(gateway, s, sp, route)
}

// addPlainOrFirst opens a listener with its first server.
func (m *merger) addPlainOrFirst(s *networking.Server, sp ServerPort, route string) {
	if !IsTLSServer(s) {
		m.plain[sp.Number] = sp
	}
	if IsHTTPServer(s) {
		m.out.ByRouteName[route] = []*networking.Server{s}
	}
	m.out.Servers[sp] = &Servers{Servers: []*networking.Server{s}, RouteName: route}
	m.out.Ports = append(m.out.Ports, sp)
}

// addBesidePlain adds a server to a port that has a plain-text server.
func (m *merger) addBesidePlain(gateway string, s *networking.Server, sp, cur ServerPort, route string) {
	sameBind := cur.Bind == sp.Bind
	if sameBind && !(protocol.Parse(sp.Protocol).IsHTTP() && protocol.Parse(cur.Protocol).IsHTTP()) {
		m.drop(gateway, s, sp.Number, "protocol "+sp.Protocol+" conflicts with the "+cur.Protocol+" server already on this port")
		return
	}
	if sameBind && route == "" {
		m.drop(gateway, s, sp.Number, "a "+sp.Protocol+" server is already on this port")
		return
	}
	if sameBind {
		ms := m.out.Servers[cur]
		ms.Servers = append(ms.Servers, s)
		m.out.ByRouteName[route] = append(m.out.ByRouteName[route], s)
		return
	}
	if ms := m.out.Servers[sp]; ms != nil {
		ms.RouteName = route
		ms.Servers = append(ms.Servers, s)
		m.out.ByRouteName[route] = append(m.out.ByRouteName[route], s)
		return
	}
	m.addPlainOrFirst(s, sp, route)
}

// addBesideTLS adds a server to a port whose servers so far use TLS.
func (m *merger) addBesideTLS(gateway string, s *networking.Server, sp ServerPort, route string) {
	if !IsTLSServer(s) {
		// the first plain-text server of a port that has TLS servers
		m.plain[sp.Number] = sp
		if IsHTTPServer(s) {
			m.out.ByRouteName[route] = []*networking.Server{s}
		}
		m.out.Servers[sp] = &Servers{Servers: []*networking.Server{s}, RouteName: route}
		m.out.Ports = append(m.out.Ports, sp)
		return
	}
	if IsHTTPServer(s) {
		if route == "" {
			m.drop(gateway, s, sp.Number, "no route configuration name can be built for it")
			return
		}
		if _, taken := m.out.ByRouteName[route]; taken {
			m.drop(gateway, s, sp.Number, "another HTTPS server on this port has the port name "+quote(s.Port.Name))
			return
		}
		m.out.ByRouteName[route] = []*networking.Server{s}
	}
	binds := m.tlsBinds[sp.Number]
	if binds == nil {
		binds = map[string]bool{}
		m.tlsBinds[sp.Number] = binds
	}
	newBind := !binds[sp.Bind]
	binds[sp.Bind] = true
	if s.Tls == nil && !newBind {
		m.drop(gateway, s, sp.Number, "a server without TLS settings cannot share a port with TLS servers")
		return
	}
	if ms := m.out.Servers[sp]; ms != nil {
		ms.Servers = append(ms.Servers, s)
		return
	}
	m.out.Servers[sp] = &Servers{Servers: []*networking.Server{s}}
	m.out.Ports = append(m.out.Ports, sp)
}
