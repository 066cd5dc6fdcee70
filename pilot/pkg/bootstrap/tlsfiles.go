package bootstrap

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/meshplane/istiod/pkg/security/ca"
)

// TLSOptions are the TLS settings of istiod's own TLS servers (the secure
// gRPC port and the webhooks), from pilot-discovery's flags.
type TLSOptions struct {
	// CertFile, KeyFile and CaCertFile are a serving certificate, its key
	// and the CA bundle that issued it (--tlsCertFile, --tlsKeyFile,
	// --caCertFile), e.g. from cert-manager. With all three set (or
	// Istio's well-known files present, see customTLSFiles) istiod serves
	// them instead of a certificate of its own CA, reloads them when the
	// files change, verifies client certificates with the bundle and
	// publishes the bundle as the mesh root (istio-ca-root-cert and the
	// webhooks' caBundle), as Istio does.
	CertFile, KeyFile, CaCertFile string
	// CipherSuites (--tls-cipher-suites, parsed; nil: Go's defaults) and
	// MinVersion (--tls-min-version, parsed; 0: TLS 1.2).
	CipherSuites []uint16
	MinVersion   uint16
}

// Istio's well-known locations of a serving certificate mounted into the
// pod (relative to the working directory, / in the image): used when the
// flags do not name all three files and all three of these exist, the CA
// bundle at either of its two places.
const (
	wellKnownTLSCert    = "./var/run/secrets/istiod/tls/tls.crt"
	wellKnownTLSKey     = "./var/run/secrets/istiod/tls/tls.key"
	wellKnownTLSCA      = "./var/run/secrets/istiod/ca/root-cert.pem"
	wellKnownTLSCAOther = "./var/run/secrets/istiod/tls/ca.crt"
)

// customTLSFiles picks the serving certificate files, as Istio's
// hasCustomTLSCerts: the flags when all three are set, else the
// well-known files when they exist.
func customTLSFiles(o TLSOptions) (cert, key, caFile string, ok bool) {
	if o.CertFile != "" && o.KeyFile != "" && o.CaCertFile != "" {
		return o.CertFile, o.KeyFile, o.CaCertFile, true
	}
	for _, caPath := range []string{wellKnownTLSCA, wellKnownTLSCAOther} {
		if regularFiles(wellKnownTLSCert, wellKnownTLSKey, caPath) {
			return wellKnownTLSCert, wellKnownTLSKey, caPath, true
		}
	}
	return "", "", "", false
}

func regularFiles(paths ...string) bool {
	for _, p := range paths {
		if st, err := os.Stat(p); err != nil || st.IsDir() {
			return false
		}
	}
	return true
}

// fileCert is a serving certificate read from files and read again when
// they change. A read or parse failure keeps the previous certificate
// (none at first: handshakes then fail until the files are right).
type fileCert struct {
	cert, key, ca string

	cur atomic.Pointer[fileBundle]

	mu       sync.Mutex
	handlers []func()
}

type fileBundle struct {
	certPEM, keyPEM, caPEM []byte
	cert                   *tls.Certificate
	pool                   *x509.CertPool
}

// fileDebounce is how long events settle before the files are read again
// (Istio's watchDebounceDelay); fileResync rereads them anyway, in case an
// event was lost.
var (
	fileDebounce = 100 * time.Millisecond
	fileResync   = time.Minute
)

// newFileCert reads the files once. It returns the fileCert even when
// they cannot be read yet (logged, as Istio logs it and runs on).
func newFileCert(cert, key, caFile string) *fileCert {
	f := &fileCert{cert: cert, key: key, ca: caFile}
	if err := f.reload(); err != nil {
		scope.Errorf("error initializing certificate watches: %v", err)
	}
	return f
}

// reload reads the three files; when they differ from the current ones
// and parse, they replace them, and the handlers run when the CA bundle
// changed.
func (f *fileCert) reload() error {
	var b fileBundle
	var err error
	if b.certPEM, err = os.ReadFile(f.cert); err != nil {
		return err
	}
	if b.keyPEM, err = os.ReadFile(f.key); err != nil {
		return err
	}
	if b.caPEM, err = os.ReadFile(f.ca); err != nil {
		return err
	}
	old := f.cur.Load()
	if old != nil && bytes.Equal(old.certPEM, b.certPEM) && bytes.Equal(old.keyPEM, b.keyPEM) && bytes.Equal(old.caPEM, b.caPEM) {
		return nil
	}
	pair, err := tls.X509KeyPair(b.certPEM, b.keyPEM)
	if err != nil {
		return fmt.Errorf("istiod loading x509 key pairs failed: %v", err)
	}
	b.pool = x509.NewCertPool()
	if !b.pool.AppendCertsFromPEM(b.caPEM) {
		return fmt.Errorf("%s: no PEM certificate", f.ca)
	}
	for _, der := range pair.Certificate {
		c, err := x509.ParseCertificate(der)
		if err != nil {
			return fmt.Errorf("x509 cert - ParseCertificates() error: %v", err)
		}
		scope.Infof("x509 cert - Issuer: %q, Subject: %q, SN: %x, NotBefore: %q, NotAfter: %q", c.Issuer, c.Subject,
			c.SerialNumber, c.NotBefore.Format(time.RFC3339), c.NotAfter.Format(time.RFC3339))
	}
	b.cert = &pair
	f.cur.Store(&b)
	scope.Infof("Istiod certificates are reloaded")
	if old == nil || !bytes.Equal(old.caPEM, b.caPEM) {
		f.mu.Lock()
		hs := slices.Clone(f.handlers)
		f.mu.Unlock()
		for _, h := range hs {
			h()
		}
	}
	return nil
}

// onCAChange registers h to run when the CA bundle changes.
func (f *fileCert) onCAChange(h func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.handlers = append(f.handlers, h)
}

// loaded reports whether a certificate has been read.
func (f *fileCert) loaded() bool { return f.cur.Load() != nil }

// caBundle is the CA file's content (nil until loaded).
func (f *fileCert) caBundle() []byte {
	if b := f.cur.Load(); b != nil {
		return bytes.Clone(b.caPEM)
	}
	return nil
}

// getCertificate is tls.Config.GetCertificate.
func (f *fileCert) getCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	if b := f.cur.Load(); b != nil {
		return b.cert, nil
	}
	return nil, errors.New("cert not initialized")
}

// clientCAs are the roots client certificates are verified with.
func (f *fileCert) clientCAs() *x509.CertPool {
	if b := f.cur.Load(); b != nil {
		return b.pool
	}
	return x509.NewCertPool()
}

// run watches the files' directories (the kubelet replaces a mounted
// Secret's files by swapping a symlink in the directory) until stop
// closes, and reloads after each burst of events and every fileResync.
func (f *fileCert) run(stop <-chan struct{}) {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		scope.Errorf("cannot watch the TLS certificate files: %v", err)
		w = nil
	}
	var events <-chan fsnotify.Event
	var errs <-chan error
	if w != nil {
		defer func() { _ = w.Close() }()
		events, errs = w.Events, w.Errors
		added := map[string]bool{}
		for _, p := range []string{f.cert, f.key, f.ca} {
			scope.Infof("adding watcher for certificate %s", p)
			dir := filepath.Dir(p)
			if added[dir] {
				continue
			}
			added[dir] = true
			if err := w.Add(dir); err != nil {
				scope.Errorf("could not watch %v: %v", p, err)
			}
		}
	}
	resync := time.NewTicker(fileResync)
	defer resync.Stop()
	var debounce <-chan time.Time
	for {
		select {
		case <-stop:
			return
		case <-events:
			if debounce == nil {
				debounce = time.After(fileDebounce)
			}
		case err := <-errs:
			scope.Errorf("error watching the TLS certificate files: %v", err)
		case <-debounce:
			debounce = nil
			if err := f.reload(); err != nil {
				scope.Errorf("Setting keyCertBundle failed: %v", err)
			}
		case <-resync.C:
			if err := f.reload(); err != nil {
				scope.Errorf("Setting keyCertBundle failed: %v", err)
			}
		}
	}
}

// serverTLSConfig is the TLS configuration of the secure gRPC port and the
// webhooks: the files' certificate when there are files, else istiod's
// certificate from its CA (ca.ServerTLSConfig); then --tls-min-version and
// --tls-cipher-suites, as Istio applies them to both servers (TLS 1.2 at
// least; the suites do not apply to TLS 1.3, as in Go).
func (sec *secure) serverTLSConfig(o TLSOptions) *tls.Config {
	var out *tls.Config
	if f := sec.files; f != nil {
		base := &tls.Config{
			MinVersion:     tls.VersionTLS12,
			NextProtos:     []string{"h2", "http/1.1"},
			GetCertificate: f.getCertificate,
			ClientAuth:     tls.VerifyClientCertIfGiven,
		}
		out = base.Clone()
		out.GetConfigForClient = func(*tls.ClientHelloInfo) (*tls.Config, error) {
			c := base.Clone()
			c.ClientCAs = f.clientCAs()
			applyTLSOptions(c, o)
			return c, nil
		}
	} else {
		out = ca.ServerTLSConfig(sec.ca, sec.serving)
		inner := out.GetConfigForClient
		out.GetConfigForClient = func(h *tls.ClientHelloInfo) (*tls.Config, error) {
			c, err := inner(h)
			if c != nil {
				applyTLSOptions(c, o)
			}
			return c, err
		}
	}
	applyTLSOptions(out, o)
	return out
}

func applyTLSOptions(c *tls.Config, o TLSOptions) {
	if o.MinVersion != 0 {
		c.MinVersion = o.MinVersion
	}
	if o.CipherSuites != nil {
		c.CipherSuites = slices.Clone(o.CipherSuites)
	}
}

// publishedRoot is the root istiod publishes to namespaces and webhooks:
// the files' CA bundle when istiod serves files (once read), else its
// CA's root.
func (sec *secure) publishedRoot() []byte {
	if sec.files != nil && sec.files.loaded() {
		return sec.files.caBundle()
	}
	return sec.ca.RootCertPEM()
}

// http2Allowed reports whether Go's HTTP/2 server accepts the suites: a
// TLS 1.2 suite list must hold ECDHE_RSA or ECDHE_ECDSA with
// AES_128_GCM_SHA256, or net/http refuses to serve at all.
func http2Allowed(o TLSOptions) bool {
	if o.CipherSuites == nil || o.MinVersion >= tls.VersionTLS13 {
		return true
	}
	return slices.Contains(o.CipherSuites, tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256) ||
		slices.Contains(o.CipherSuites, tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256)
}

// http1Only makes c offer only HTTP/1.1 in ALPN, its per-client
// configurations included.
func http1Only(c *tls.Config) *tls.Config {
	c.NextProtos = []string{"http/1.1"}
	if inner := c.GetConfigForClient; inner != nil {
		c.GetConfigForClient = func(h *tls.ClientHelloInfo) (*tls.Config, error) {
			cc, err := inner(h)
			if cc != nil {
				cc.NextProtos = []string{"http/1.1"}
			}
			return cc, err
		}
	}
	return c
}
