package model

import (
	"context"
	"errors"
	"net"
	"slices"
	"sync"
	"time"

	"github.com/meshplane/istiod/pkg/log"
)

// This file resolves network gateway hostnames in the control plane, as
// Istio does with RESOLVE_HOSTNAME_GATEWAYS on (its default): a gateway
// whose address is a hostname (an AWS load balancer, say) becomes one
// gateway per A and AAAA address of the name. Names are resolved in the
// background, never on the push path: a new name has no address until
// its first answer, which forces a push; answers are refreshed, and a
// changed answer forces a push. A failed lookup keeps the last addresses;
// a name that does not exist has none. Names no gateway uses any more are
// forgotten.
//
// Istio refreshes a name when its records' TTL expires, clamped to
// between 30 seconds and an hour; the Go resolver does not report TTLs,
// so names are refreshed every 30 seconds (Istio's floor), which pushes
// only when an answer changes.

// gatewayLog is Istio's scope for its model's messages.
var gatewayLog = log.RegisterScope("model", "the service model: network gateways")

// DefaultGatewayRefresh is how often gateway hostnames are resolved again.
const DefaultGatewayRefresh = 30 * time.Second

// DNSGatewayResolverOptions configure a DNSGatewayResolver.
type DNSGatewayResolverOptions struct {
	// Lookup resolves a name to IP addresses (nil: the Go resolver). A
	// *net.DNSError with IsNotFound means the name has none; another error
	// keeps the last answer.
	Lookup func(ctx context.Context, name string) ([]string, error)
	// Refresh is how often a name is resolved again (0:
	// DefaultGatewayRefresh).
	Refresh time.Duration
	// Timeout bounds one lookup (0: 5 seconds).
	Timeout time.Duration
	// OnChange is called, from a resolver goroutine, when the addresses
	// of a name in use changed (the caller forces a push).
	OnChange func()
	// Stop ends the background lookups.
	Stop <-chan struct{}
}

// DNSGatewayResolver is the GatewayResolver of istiod.
type DNSGatewayResolver struct {
	opts DNSGatewayResolverOptions

	mu    sync.Mutex
	names map[string]*gatewayName
}

type gatewayName struct {
	addrs    []string
	resolved bool
	timer    *time.Timer
	gone     bool
}

var _ GatewayResolver = (*DNSGatewayResolver)(nil)

// NewDNSGatewayResolver returns a resolver with no names yet.
func NewDNSGatewayResolver(opts DNSGatewayResolverOptions) *DNSGatewayResolver {
	if opts.Lookup == nil {
		opts.Lookup = lookupIPs
	}
	if opts.Refresh <= 0 {
		opts.Refresh = DefaultGatewayRefresh
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 5 * time.Second
	}
	return &DNSGatewayResolver{opts: opts, names: map[string]*gatewayName{}}
}

// Resolve implements GatewayResolver.
func (r *DNSGatewayResolver) Resolve(names []string) map[string][]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	for name, e := range r.names {
		if !slices.Contains(names, name) {
			e.gone = true
			if e.timer != nil {
				e.timer.Stop()
			}
			delete(r.names, name)
		}
	}
	out := make(map[string][]string, len(names))
	for _, name := range names {
		e, ok := r.names[name]
		if !ok {
			e = &gatewayName{}
			r.names[name] = e
			go r.refresh(name, e)
			continue
		}
		if len(e.addrs) > 0 {
			out[name] = e.addrs
		}
	}
	return out
}

// refresh resolves name, records the answer, schedules the next lookup
// and reports a change.
func (r *DNSGatewayResolver) refresh(name string, e *gatewayName) {
	select {
	case <-r.opts.Stop:
		return
	default:
	}
	ctx, cancel := context.WithTimeout(context.Background(), r.opts.Timeout)
	addrs, err := r.opts.Lookup(ctx, name)
	cancel()
	slices.Sort(addrs)
	addrs = slices.Compact(addrs)
	r.mu.Lock()
	if e.gone {
		r.mu.Unlock()
		return
	}
	changed := false
	switch {
	case err == nil || nameNotFound(err):
		if err != nil {
			addrs = nil
		}
		changed = !slices.Equal(e.addrs, addrs) && (e.resolved || len(addrs) > 0)
		if len(addrs) == 0 && (changed || !e.resolved) {
			gatewayLog.Warnf("network gateway %s: the name has no address; the gateway is not used", name)
		}
		e.addrs = addrs
	default:
		gatewayLog.Warnf("network gateway %s: lookup failed, keeping its addresses %v: %v", name, e.addrs, err)
	}
	e.resolved = true
	e.timer = time.AfterFunc(r.opts.Refresh, func() { r.refresh(name, e) })
	r.mu.Unlock()
	if changed && r.opts.OnChange != nil {
		r.opts.OnChange()
	}
}

// nameNotFound reports whether a lookup error says the name has no
// address.
func nameNotFound(err error) bool {
	var de *net.DNSError
	return errors.As(err, &de) && de.IsNotFound
}

func lookupIPs(ctx context.Context, name string) ([]string, error) {
	ips, err := net.DefaultResolver.LookupIPAddr(ctx, name)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(ips))
	for _, ip := range ips {
		out = append(out, ip.IP.String())
	}
	return out, nil
}

// NewGatewayResolver returns the GatewayResolver of istiod for
// RESOLVE_HOSTNAME_GATEWAYS: with resolve (Istio's default) a
// DNSGatewayResolver over opts; without, as in Istio, no name is resolved
// in the control plane: a gateway given by hostname is left out of the
// gateways EDS uses (it stays among the unresolved ones of
// /debug/pushcontext), with Istio's warning once per name. Nothing is
// handed to the proxies in its place: EDS endpoints need an IP.
func NewGatewayResolver(resolve bool, opts DNSGatewayResolverOptions) GatewayResolver {
	if resolve {
		return NewDNSGatewayResolver(opts)
	}
	return &noGatewayResolver{warned: map[string]bool{}}
}

// noGatewayResolver resolves nothing (RESOLVE_HOSTNAME_GATEWAYS=false).
type noGatewayResolver struct {
	mu sync.Mutex
	// warned are the names in use already warned about
	warned map[string]bool
}

// Resolve implements GatewayResolver: no name has an address.
func (r *noGatewayResolver) Resolve(names []string) map[string][]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	for name := range r.warned {
		if !slices.Contains(names, name) {
			delete(r.warned, name)
		}
	}
	for _, name := range names {
		if !r.warned[name] {
			r.warned[name] = true
			gatewayLog.Warnf("Failed parsing gateway address %s from Service Registry. "+
				"Set RESOLVE_HOSTNAME_GATEWAYS on istiod to enable resolving hostnames in the control plane.", name)
		}
	}
	return nil
}
