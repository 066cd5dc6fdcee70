package protocol_test

import (
	"testing"

	"github.com/meshplane/istiod/pkg/config/protocol"
)

func ptr(s string) *string { return &s }

func TestFromKubernetes(t *testing.T) {
	cases := []struct {
		name      string
		port      int32
		portName  string
		transport string
		app       *string
		want      protocol.Instance
	}{
		{"plain http name", 80, "http", "TCP", nil, protocol.HTTP},
		{"name prefix", 80, "http-api", "TCP", nil, protocol.HTTP},
		{"name case-insensitive", 80, "HTTP2-x", "TCP", nil, protocol.HTTP2},
		{"https", 443, "https", "TCP", nil, protocol.HTTPS},
		{"grpc", 9090, "grpc", "TCP", nil, protocol.GRPC},
		{"grpc-web before prefix split", 8080, "grpc-web", "TCP", nil, protocol.GRPCWeb},
		{"grpc-web with suffix", 8080, "grpc-web-x", "TCP", nil, protocol.GRPCWeb},
		{"tcp", 9102, "tcp-metrics", "TCP", nil, protocol.TCP},
		{"tls", 443, "tls", "TCP", nil, protocol.TLS},
		{"mongo", 1, "mongo", "TCP", nil, protocol.Mongo},
		{"mysql", 1, "mysql-db", "TCP", nil, protocol.MySQL},
		{"redis", 1, "redis", "TCP", nil, protocol.Redis},
		{"unknown name sniffed", 8080, "web", "TCP", nil, protocol.Unsupported},
		{"empty name sniffed", 8080, "", "TCP", nil, protocol.Unsupported},
		{"name without dash not a prefix", 8080, "httpfoo", "TCP", nil, protocol.Unsupported},
		{"udp transport wins", 53, "http", "UDP", nil, protocol.UDP},
		{"appProtocol wins over name", 80, "tcp", "TCP", ptr("http"), protocol.HTTP},
		{"appProtocol grpc", 80, "http", "TCP", ptr("grpc"), protocol.GRPC},
		{"appProtocol unknown: name not read", 80, "http", "TCP", ptr("example.com/custom"), protocol.Unsupported},
		{"appProtocol h2c", 80, "", "TCP", ptr("kubernetes.io/h2c"), protocol.HTTP2},
		{"appProtocol ws", 80, "", "TCP", ptr("kubernetes.io/ws"), protocol.HTTP},
		{"appProtocol wss", 80, "", "TCP", ptr("kubernetes.io/wss"), protocol.HTTPS},
		{"server-first port is TCP", 3306, "db", "TCP", nil, protocol.TCP},
		{"server-first port keeps a declared protocol", 3306, "http", "TCP", nil, protocol.HTTP},
		{"smtp", 25, "", "TCP", nil, protocol.TCP},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := protocol.FromKubernetes(c.port, c.portName, c.transport, c.app); got != c.want {
				t.Fatalf("got %v, want %v", got, c.want)
			}
		})
	}
}

func TestParseAndPredicates(t *testing.T) {
	if protocol.Parse("Http") != protocol.HTTP || protocol.Parse("") != protocol.Unsupported {
		t.Fatal("Parse")
	}
	if !protocol.GRPC.IsHTTP() || !protocol.GRPC.IsHTTP2() || protocol.TCP.IsHTTP() {
		t.Fatal("IsHTTP")
	}
	if !protocol.HTTPS.IsTCP() || !protocol.HTTPS.IsTLS() || protocol.HTTP.IsTLS() {
		t.Fatal("IsTCP/IsTLS")
	}
	if !protocol.Unsupported.IsUnsupported() || !protocol.GRPCWeb.IsGRPC() {
		t.Fatal("IsUnsupported/IsGRPC")
	}
}
