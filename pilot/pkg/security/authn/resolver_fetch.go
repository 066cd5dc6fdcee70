package authn

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"github.com/prometheus/client_golang/prometheus"
)

// maxJwksBytes bounds a response body.
const maxJwksBytes = 1 << 20

// fetch gets the key set of k: for an issuer, its OpenID discovery document
// first, then the jwks_uri it names.
func (r *Resolver) fetch(ctx context.Context, k jwksKey) fetchResult {
	uri := k.uri
	if k.issuer {
		doc, err := r.get(ctx, strings.TrimSuffix(k.uri, "/")+"/.well-known/openid-configuration")
		if err != nil {
			return fetchResult{key: k, err: fmt.Errorf("OpenID discovery of issuer %s: %w", k.uri, err)}
		}
		var d struct {
			JwksURI string `json:"jwks_uri"`
		}
		if err := json.Unmarshal(doc, &d); err != nil || d.JwksURI == "" {
			return fetchResult{key: k, err: fmt.Errorf("OpenID discovery of issuer %s: no jwks_uri", k.uri)}
		}
		uri = d.JwksURI
	}
	body, err := r.get(ctx, uri)
	if err != nil {
		return fetchResult{key: k, err: err}
	}
	if err := checkKeySet(body); err != nil {
		return fetchResult{key: k, err: fmt.Errorf("%s: %w", uri, err)}
	}
	return fetchResult{key: k, jwks: string(body)}
}

// get fetches uri within the timeout; only a 2xx answer is a success.
func (r *Resolver) get(ctx context.Context, uri string) (body []byte, err error) {
	defer func() { r.opts.Metrics.count(err) }()
	ctx, cancel := context.WithTimeout(ctx, r.opts.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, uri, nil)
	if err != nil {
		return nil, err
	}
	resp, err := r.opts.Client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err = io.ReadAll(io.LimitReader(resp.Body, maxJwksBytes+1))
	if err != nil {
		return nil, err
	}
	if len(body) > maxJwksBytes {
		return nil, fmt.Errorf("GET %s: body larger than %d bytes", uri, maxJwksBytes)
	}
	if resp.StatusCode < 200 || resp.StatusCode >= 300 {
		msg := strconv.Quote(string(body))
		if len(msg) > 100 {
			msg = msg[:100] + "(truncated)"
		}
		return nil, fmt.Errorf("GET %s: status %d, message %s", uri, resp.StatusCode, msg)
	}
	return body, nil
}

// checkKeySet accepts a JSON object with a "keys" array: anything else
// would make Envoy reject every token, so it is not served and the last
// good keys stay.
func checkKeySet(b []byte) error {
	var ks struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := json.Unmarshal(b, &ks); err != nil {
		return fmt.Errorf("not a JSON Web Key Set: %v", err)
	}
	if ks.Keys == nil {
		return errors.New(`not a JSON Web Key Set: no "keys"`)
	}
	return nil
}

// sameKeySet reports whether two key sets hold the same keys, in any order
// (compared by kid, as Istio does, so a reordered answer triggers no push).
func sameKeySet(a, b string) bool {
	if a == b {
		return true
	}
	norm := func(s string) (map[string]any, bool) {
		var m map[string]any
		if json.Unmarshal([]byte(s), &m) != nil {
			return nil, false
		}
		if keys, ok := m["keys"].([]any); ok {
			sort.SliceStable(keys, func(i, j int) bool { return kid(keys[i]) < kid(keys[j]) })
		}
		return m, true
	}
	ma, okA := norm(a)
	mb, okB := norm(b)
	return okA && okB && reflect.DeepEqual(ma, mb)
}

func kid(k any) string {
	m, _ := k.(map[string]any)
	s, _ := m["kid"].(string)
	return s
}

// HTTPClientOptions configure NewHTTPClient.
type HTTPClientOptions struct {
	// BlockedCIDRs are addresses never connected to, checked on the
	// resolved address of every connection, redirects included
	// (BLOCKED_CIDRS_IN_JWKS_URIS).
	BlockedCIDRs []netip.Prefix
	// RootCAs verify HTTPS servers (nil: the system roots; Istio adds
	// /cacerts/extra.pem when present).
	RootCAs *x509.CertPool
	// InsecureSkipVerify skips server verification
	// (JWKS_RESOLVER_INSECURE_SKIP_VERIFY).
	InsecureSkipVerify bool
}

// NewHTTPClient returns the client Istio's resolver uses: proxy from the
// environment, no keep-alives, TLS 1.2 or later, blocked CIDRs refused at
// dial time.
func NewHTTPClient(o HTTPClientOptions) *http.Client {
	dialer := &net.Dialer{}
	if blocked := o.BlockedCIDRs; len(blocked) > 0 {
		dialer.Control = func(_, address string, _ syscall.RawConn) error {
			host, _, err := net.SplitHostPort(address)
			if err != nil {
				return err
			}
			ip, err := netip.ParseAddr(host)
			if err != nil {
				return fmt.Errorf("unable to parse IP from resolved address %s", address)
			}
			for _, p := range blocked {
				if p.Contains(ip.Unmap()) {
					return fmt.Errorf("connection to %s blocked: IP is in blocked CIDR range %s", address, p)
				}
			}
			return nil
		}
	}
	return &http.Client{Transport: &http.Transport{
		Proxy:             http.ProxyFromEnvironment,
		DisableKeepAlives: true,
		DialContext:       dialer.DialContext,
		TLSClientConfig: &tls.Config{
			RootCAs:            o.RootCAs,
			MinVersion:         tls.VersionTLS12,
			InsecureSkipVerify: o.InsecureSkipVerify, //nolint:gosec // the operator opted in
		},
	}}
}

// ResolverMetrics count the resolver's HTTP requests under Istio's names.
type ResolverMetrics struct {
	success, fail prometheus.Counter
}

// NewResolverMetrics creates and registers the counters
// pilot_jwks_resolver_network_fetch_success_total and
// pilot_jwks_resolver_network_fetch_fail_total.
func NewResolverMetrics(reg prometheus.Registerer) (*ResolverMetrics, error) {
	m := &ResolverMetrics{
		success: prometheus.NewCounter(prometheus.CounterOpts{Name: "pilot_jwks_resolver_network_fetch_success_total",
			Help: "Total number of successfully network fetch by pilot jwks resolver"}),
		fail: prometheus.NewCounter(prometheus.CounterOpts{Name: "pilot_jwks_resolver_network_fetch_fail_total",
			Help: "Total number of failed network fetch by pilot jwks resolver"}),
	}
	for _, c := range []prometheus.Collector{m.success, m.fail} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func (m *ResolverMetrics) count(err error) {
	switch {
	case m == nil:
	case err == nil:
		m.success.Inc()
	default:
		m.fail.Inc()
	}
}
