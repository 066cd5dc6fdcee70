package protocol

import "strings"

// Instance is the protocol of a port, spelled as Istio spells it in its debug
// output and in ServiceEntry ports.
type Instance string

// The protocols.
const (
	GRPC      Instance = "GRPC"
	GRPCWeb   Instance = "GRPC-Web"
	HTTP      Instance = "HTTP"
	HTTPProxy Instance = "HTTP_PROXY"
	HTTP2     Instance = "HTTP2"
	HTTPS     Instance = "HTTPS"
	TCP       Instance = "TCP"
	TLS       Instance = "TLS"
	UDP       Instance = "UDP"
	Mongo     Instance = "Mongo"
	Redis     Instance = "Redis"
	MySQL     Instance = "MySQL"
	// Unsupported means "not declared": the proxy sniffs the protocol.
	Unsupported Instance = "UnsupportedProtocol"
)

func (i Instance) String() string { return string(i) }

// Parse reads a protocol name, ignoring case; anything unknown (including
// "") is Unsupported.
func Parse(s string) Instance {
	switch strings.ToLower(s) {
	case "tcp":
		return TCP
	case "udp":
		return UDP
	case "grpc":
		return GRPC
	case "grpc-web":
		return GRPCWeb
	case "http":
		return HTTP
	case "http_proxy":
		return HTTPProxy
	case "http2":
		return HTTP2
	case "https":
		return HTTPS
	case "tls":
		return TLS
	case "mongo":
		return Mongo
	case "redis":
		return Redis
	case "mysql":
		return MySQL
	}
	return Unsupported
}

// FromName reads the protocol from a port name: names starting with
// "grpc-web" are GRPCWeb; otherwise the part before the first "-" is parsed
// ("http", "http-api", "tcp-metrics"); anything else is Unsupported.
func FromName(name string) Instance {
	const grpcWeb = "grpc-web"
	if len(name) >= len(grpcWeb) && strings.EqualFold(name[:len(grpcWeb)], grpcWeb) {
		return GRPCWeb
	}
	if i := strings.IndexByte(name, '-'); i >= 0 {
		name = name[:i]
	}
	return Parse(name)
}

// serverFirstPorts are ports whose servers talk first (SMTP, DNS, MySQL,
// MongoDB): sniffing would hang them, so an undeclared protocol there is TCP.
var serverFirstPorts = map[int32]bool{25: true, 53: true, 3306: true, 27017: true}

// Kubernetes application protocols with a fixed meaning.
const (
	AppProtocolH2C = "kubernetes.io/h2c"
	AppProtocolWS  = "kubernetes.io/ws"
	AppProtocolWSS = "kubernetes.io/wss"
)

// FromKubernetes selects the protocol of a Kubernetes Service port: a UDP
// transport is UDP; otherwise appProtocol when set (the kubernetes.io/ names
// included; the port name is then not read), else the port name's prefix. An
// undeclared protocol on a server-first port is TCP.
func FromKubernetes(port int32, name, transport string, appProtocol *string) Instance {
	if strings.EqualFold(transport, "UDP") {
		return UDP
	}
	out := FromName(name)
	if appProtocol != nil {
		switch *appProtocol {
		case AppProtocolH2C:
			return HTTP2
		case AppProtocolWS:
			return HTTP
		case AppProtocolWSS:
			return HTTPS
		}
		out = FromName(*appProtocol)
	}
	if out == Unsupported && serverFirstPorts[port] {
		return TCP
	}
	return out
}

// IsHTTP2 is true for protocols carried over HTTP/2.
func (i Instance) IsHTTP2() bool {
	return i == HTTP2 || i == GRPC || i == GRPCWeb
}

// IsHTTP is true for protocols carried over HTTP.
func (i Instance) IsHTTP() bool {
	switch i {
	case HTTP, HTTP2, HTTPProxy, GRPC, GRPCWeb:
		return true
	}
	return false
}

// IsTCP is true for protocols proxied as opaque TCP.
func (i Instance) IsTCP() bool {
	switch i {
	case TCP, HTTPS, TLS, Mongo, Redis, MySQL:
		return true
	}
	return false
}

// IsTLS is true for protocols on top of TLS.
func (i Instance) IsTLS() bool { return i == HTTPS || i == TLS }

// IsGRPC is true for gRPC and gRPC-Web.
func (i Instance) IsGRPC() bool { return i == GRPC || i == GRPCWeb }

// IsUnsupported is true when the protocol was not declared.
func (i Instance) IsUnsupported() bool { return i == Unsupported }
