package bootstrap

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/meshplane/istiod/pkg/webhooks/validation/server"
)

// hangGuard only keeps a failing test from hanging: the server is expected
// to close the connection long before it.
const hangGuard = 10 * time.Second

// startWebhookServer serves the validation webhook on 127.0.0.1:0 over TLS
// with the given timeouts, as startWebhooks builds it.
func startWebhookServer(t *testing.T, timeouts webhookTimeouts) (addr string, roots *x509.CertPool) {
	t.Helper()
	wh, err := server.New(server.Options{Validate: webhookValidator("cluster.local")})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	wh.Register(mux)
	ts := httptest.NewUnstartedServer(nil)
	ts.Config = newWebhookServer(mux, nil, timeouts)
	ts.StartTLS()
	t.Cleanup(ts.Close)
	roots = x509.NewCertPool()
	roots.AddCert(ts.Certificate())
	return ts.Listener.Addr().String(), roots
}

func dialWebhook(t *testing.T, addr string, roots *x509.CertPool) *tls.Conn {
	t.Helper()
	c, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: roots})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	if err := c.SetDeadline(time.Now().Add(hangGuard)); err != nil {
		t.Fatal(err)
	}
	return c
}

// waitClosed reads until the server closes the connection; a timeout of
// the guard means it never did.
func waitClosed(t *testing.T, r io.Reader, what string) {
	t.Helper()
	_, err := io.Copy(io.Discard, r)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("%s: the server kept the connection open (%v)", what, err)
	}
}

// A client that sends its headers and then stalls in the body is
// disconnected once the request's read timeout passes.
func TestWebhookServerDropsStalledBody(t *testing.T) {
	addr, roots := startWebhookServer(t, webhookTimeouts{ReadHeader: time.Minute, Read: time.Second, Idle: time.Minute})
	c := dialWebhook(t, addr, roots)
	if _, err := io.WriteString(c, "POST /validate HTTP/1.1\r\nHost: istiod\r\nContent-Type: application/json\r\n"+
		"Content-Length: 1000\r\n\r\n{\"kind\":"); err != nil {
		t.Fatal(err)
	}
	waitClosed(t, c, "stalled body")
}

// An idle keep-alive connection is closed once the idle timeout passes.
func TestWebhookServerClosesIdleConnection(t *testing.T) {
	addr, roots := startWebhookServer(t, webhookTimeouts{ReadHeader: time.Minute, Read: time.Minute, Idle: 100 * time.Millisecond})
	c := dialWebhook(t, addr, roots)
	if _, err := io.WriteString(c, "GET /validate HTTP/1.1\r\nHost: istiod\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.Close {
		t.Fatalf("the server closed after the first response (%s): no keep-alive to test", resp.Status)
	}
	waitClosed(t, br, "idle keep-alive connection")
}

// The production server bounds the whole request and idle connections,
// not only the headers.
func TestWebhookServerDefaults(t *testing.T) {
	srv := newWebhookServer(http.NewServeMux(), nil, defaultWebhookTimeouts)
	if srv.ReadHeaderTimeout <= 0 || srv.ReadTimeout <= 0 || srv.IdleTimeout <= 0 {
		t.Errorf("timeouts: header %v, read %v, idle %v", srv.ReadHeaderTimeout, srv.ReadTimeout, srv.IdleTimeout)
	}
}
