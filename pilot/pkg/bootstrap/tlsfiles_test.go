package bootstrap_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/meshplane/istiod/pilot/pkg/bootstrap"
)

// testCA is a CA of the test's own, standing for cert-manager's.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

func newTestCA(t *testing.T) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test root"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true,
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return &testCA{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// issue signs a serving certificate for istiod's service name and returns
// its PEM, its key's PEM and its serial.
func (c *testCA) issue(t *testing.T, serial int64) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: "istiod"},
		DNSNames: []string{"istiod.istio-system.svc"}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, c.cert, &key.PublicKey, c.key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})
}

// writeAtomically replaces path as the kubelet replaces a Secret's file:
// a new file renamed over the old one.
func writeAtomically(t *testing.T, path string, b []byte) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// handshake connects to addr trusting roots and returns the serial of the
// certificate served, or the handshake's error.
func handshake(addr string, roots *x509.CertPool, cfg *tls.Config) (int64, error) {
	serial, _, err := handshakeALPN(addr, roots, cfg)
	return serial, err
}

// handshakeALPN is handshake, offering h2 and http/1.1, and also returns
// the protocol the server chose.
func handshakeALPN(addr string, roots *x509.CertPool, cfg *tls.Config) (int64, string, error) {
	c := &tls.Config{RootCAs: roots, ServerName: "istiod.istio-system.svc", NextProtos: []string{"h2", "http/1.1"}}
	if cfg != nil {
		c.MinVersion, c.MaxVersion, c.CipherSuites = cfg.MinVersion, cfg.MaxVersion, cfg.CipherSuites
	}
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, c)
	if err != nil {
		return 0, "", err
	}
	defer conn.Close()
	st := conn.ConnectionState()
	return st.PeerCertificates[0].SerialNumber.Int64(), st.NegotiatedProtocol, nil
}

func startServer(t *testing.T, args bootstrap.PilotArgs) *bootstrap.Server {
	t.Helper()
	args.ShutdownDuration = 5 * time.Second
	srv, err := bootstrap.NewServer(args)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	return srv
}

// --tlsCertFile, --tlsKeyFile and --caCertFile: the secure gRPC port and
// the webhooks serve the files' certificate instead of one of istiod's CA,
// serve the new one once the files change, and --tls-min-version applies
// to both.
func TestServingCertificateFromFiles(t *testing.T) {
	dir := t.TempDir()
	ca := newTestCA(t)
	certPEM, keyPEM := ca.issue(t, 100)
	files := map[string][]byte{"tls.crt": certPEM, "tls.key": keyPEM, "ca.crt": ca.pem}
	for name, b := range files {
		writeAtomically(t, filepath.Join(dir, name), b)
	}
	args := newFileServerArgs(t, filepath.Join(t.TempDir(), "ca"))
	args.TLS = bootstrap.TLSOptions{CertFile: filepath.Join(dir, "tls.crt"), KeyFile: filepath.Join(dir, "tls.key"),
		CaCertFile: filepath.Join(dir, "ca.crt"), MinVersion: tls.VersionTLS13}
	srv := startServer(t, args)
	roots := x509.NewCertPool()
	roots.AddCert(ca.cert)
	addrs := map[string]string{"--secureGRPCAddr": srv.SecureGRPCAddr(), "--httpsAddr": srv.HTTPSAddr()}
	for flag, addr := range addrs {
		if serial, err := handshake(addr, roots, nil); err != nil || serial != 100 {
			t.Errorf("%s: serial %d, %v; want the files' certificate 100", flag, serial, err)
		}
		if _, err := handshake(addr, roots, &tls.Config{MaxVersion: tls.VersionTLS12}); err == nil {
			t.Errorf("%s: a TLS 1.2 client got in with --tls-min-version 1.3", flag)
		}
	}
	// istiod's own CA did not issue what is served
	own := x509.NewCertPool()
	own.AppendCertsFromPEM(srv.CA().RootCertPEM())
	if _, err := handshake(srv.HTTPSAddr(), own, nil); err == nil {
		t.Error("the served certificate verifies against istiod's own root")
	}

	certPEM, keyPEM = ca.issue(t, 101)
	writeAtomically(t, filepath.Join(dir, "tls.key"), keyPEM)
	writeAtomically(t, filepath.Join(dir, "tls.crt"), certPEM)
	for flag, addr := range addrs {
		deadline := time.Now().Add(10 * time.Second)
		for {
			serial, err := handshake(addr, roots, nil)
			if err == nil && serial == 101 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: serial %d, %v after the files changed; want 101", flag, serial, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}

// Without files, the certificate is istiod's CA's, and --tls-cipher-suites
// restricts the TLS 1.2 suites of both TLS servers. A list without the
// suite HTTP/2 requires leaves the webhooks on HTTP/1.1 (net/http would
// not serve at all); the gRPC port keeps h2.
func TestTLSCipherSuitesApplyToBothServers(t *testing.T) {
	args := newFileServerArgs(t, filepath.Join(t.TempDir(), "ca"))
	args.TLS.CipherSuites = []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384, tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384}
	srv := startServer(t, args)
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(srv.CA().RootCertPEM())
	tls12 := func(suites ...uint16) *tls.Config {
		return &tls.Config{MaxVersion: tls.VersionTLS12, CipherSuites: suites}
	}
	for flag, addr := range map[string]string{"--secureGRPCAddr": srv.SecureGRPCAddr(), "--httpsAddr": srv.HTTPSAddr()} {
		if _, err := handshake(addr, roots, tls12(tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256)); err == nil {
			t.Errorf("%s: a suite left out of --tls-cipher-suites was negotiated", flag)
		}
		if _, err := handshake(addr, roots, tls12(tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384, tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384)); err != nil {
			t.Errorf("%s: a listed suite: %v", flag, err)
		}
		_, proto, err := handshakeALPN(addr, roots, nil)
		if err != nil {
			t.Errorf("%s: TLS 1.3: %v", flag, err)
		}
		if want := map[string]string{"--secureGRPCAddr": "h2", "--httpsAddr": "http/1.1"}[flag]; proto != want {
			t.Errorf("%s: protocol %q, want %q", flag, proto, want)
		}
	}
}
