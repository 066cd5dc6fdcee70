package kube

import (
	"encoding/pem"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/rest"

	"github.com/meshplane/istiod/pkg/config/schema/gvr"
)

// apiStub serves an empty Namespace list and a watch that stays open,
// and counts the connections open to it.
type apiStub struct {
	srv  *httptest.Server
	mu   sync.Mutex
	open map[net.Conn]bool
}

func newAPIStub(t *testing.T) *apiStub {
	t.Helper()
	a := &apiStub{open: map[net.Conn]bool{}}
	a.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Query().Get("watch") == "true" {
			w.WriteHeader(http.StatusOK)
			w.(http.Flusher).Flush()
			<-r.Context().Done()
			return
		}
		_, _ = w.Write([]byte(`{"kind":"NamespaceList","apiVersion":"v1","metadata":{"resourceVersion":"1"},"items":[]}`))
	}))
	a.srv.Config.ConnState = func(c net.Conn, st http.ConnState) {
		a.mu.Lock()
		defer a.mu.Unlock()
		switch st {
		case http.StateNew:
			a.open[c] = true
		case http.StateClosed, http.StateHijacked:
			delete(a.open, c)
		}
	}
	a.srv.Start()
	t.Cleanup(a.srv.Close)
	return a
}

func (a *apiStub) conns() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.open)
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Close stops the client's informers (and waits for them) and closes its
// connections, while another client of the same config keeps its own:
// a client let go of (a remote cluster removed or rotated) leaves no
// connection pool behind. (Before Close, the clients' transport was
// client-go's shared one, kept for the life of the process.)
func TestCloseReleasesInformersAndConnections(t *testing.T) {
	noWatchList()
	api := newAPIStub(t)
	cfg := &rest.Config{Host: api.srv.URL}
	start := func() (Client, func() bool) {
		c, err := NewClient(cfg, Options{})
		if err != nil {
			t.Fatal(err)
		}
		inf, err := c.Informer(gvr.Namespace)
		if err != nil {
			t.Fatal(err)
		}
		c.Start(make(chan struct{})) // never closed: Close alone stops it
		waitFor(t, "the informer synced", inf.HasSynced)
		return c, inf.IsStopped
	}
	closed, closedStopped := start()
	kept, keptStopped := start()
	t.Cleanup(kept.Close)
	waitFor(t, "both watches open", func() bool { return api.conns() >= 2 })
	before := api.conns()

	closed.Close()
	if !closedStopped() {
		t.Error("Close returned before the informer stopped")
	}
	waitFor(t, "the closed client's connection closed", func() bool { return api.conns() == before-1 })
	if keptStopped() {
		t.Error("closing one client stopped another's informer")
	}
	// closing again, and starting after Close, do nothing
	closed.Close()
	inf, err := closed.Informer(gvr.Pod)
	if err != nil {
		t.Fatal(err)
	}
	closed.Start(make(chan struct{}))
	time.Sleep(100 * time.Millisecond)
	if inf.HasSynced() {
		t.Error("an informer started after Close")
	}
	kept.Close()
	waitFor(t, "every connection closed", func() bool { return api.conns() == 0 })
}

// Two clients of one config each own their transport, also with TLS
// settings (which client-go's cache would hand both, and keep for good).
func TestClientsOwnTheirTransport(t *testing.T) {
	srv := httptest.NewTLSServer(http.NotFoundHandler())
	defer srv.Close()
	cfg := &rest.Config{Host: srv.URL, TLSClientConfig: rest.TLSClientConfig{CAData: certPEM(t, srv)}}
	transportOf := func() *http.Transport {
		c, err := NewClient(cfg, Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		rt := c.(*client).http.Transport
		for {
			switch x := rt.(type) {
			case *http.Transport:
				return x
			case utilnet.RoundTripperWrapper:
				rt = x.WrappedRoundTripper()
			default:
				t.Fatalf("transport %T", rt)
			}
		}
	}
	if a, b := transportOf(), transportOf(); a == b {
		t.Error("two clients share one transport")
	}
}

// The fake client's Close stops its informers too.
func TestFakeClientClose(t *testing.T) {
	c := NewFakeClient()
	inf, err := c.Informer(gvr.Namespace)
	if err != nil {
		t.Fatal(err)
	}
	c.Start(make(chan struct{}))
	waitFor(t, "the informer synced", inf.HasSynced)
	c.Close()
	if !inf.IsStopped() {
		t.Error("the informer runs on after Close")
	}
}

// InCluster builds rest.InClusterConfig's config from given inputs.
func TestInClusterConfig(t *testing.T) {
	dir := t.TempDir()
	token, ca := filepath.Join(dir, "token"), filepath.Join(dir, "ca.crt")
	if err := os.WriteFile(token, []byte("secret-token"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := (InCluster{Port: "443", TokenFile: token}).Config(); err != rest.ErrNotInCluster {
		t.Errorf("without a host: %v, want ErrNotInCluster", err)
	}
	if _, err := (InCluster{Host: "10.0.0.1", Port: "443", TokenFile: filepath.Join(dir, "none")}).Config(); err == nil {
		t.Error("a missing token file is no error")
	}
	// a CA file that does not load is left out, as client-go does
	cfg, err := InCluster{Host: "fd00::1", Port: "6443", TokenFile: token, CAFile: ca}.Config()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Host != "https://[fd00::1]:6443" || cfg.BearerToken != "secret-token" || cfg.BearerTokenFile != token || cfg.CAFile != "" {
		t.Errorf("config %+v", cfg)
	}
	srv := httptest.NewTLSServer(http.NotFoundHandler())
	defer srv.Close()
	pem := certPEM(t, srv)
	if err := os.WriteFile(ca, pem, 0o600); err != nil {
		t.Fatal(err)
	}
	if cfg, err = (InCluster{Host: "10.0.0.1", Port: "443", TokenFile: token, CAFile: ca}).Config(); err != nil || cfg.CAFile != ca {
		t.Errorf("with a CA: %+v, %v", cfg, err)
	}
	if !strings.HasPrefix(ServiceAccountTokenFile, "/var/run/secrets/kubernetes.io/serviceaccount/") {
		t.Error(ServiceAccountTokenFile)
	}
}

func certPEM(t *testing.T, srv *httptest.Server) []byte {
	t.Helper()
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
}
