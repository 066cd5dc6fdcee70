package xds

import (
	"fmt"
	"sort"
	"strings"

	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"

	"github.com/meshplane/istiod/pkg/diag"
)

// heldSet indexes held resources by name (nil when there are none).
func heldSet(hs []Held) map[string]string {
	if len(hs) == 0 {
		return nil
	}
	out := make(map[string]string, len(hs))
	for _, h := range hs {
		out[h.Name] = h.Reason
	}
	return out
}

// withHeldCopies adds to res the copies of held resources that the last
// response carried.
func withHeldCopies(res, last []*discovery.Resource, held map[string]string) []*discovery.Resource {
	out := res
	for _, r := range last {
		if _, ok := held[r.Name]; ok {
			if len(out) == len(res) {
				out = append(make([]*discovery.Resource, 0, len(res)+len(held)), res...)
			}
			out = append(out, r)
		}
	}
	return out
}

// partialHeld is what stays held after a partial push: the names held
// before that it did not regenerate, and the ones it held now.
func partialHeld(before map[string]string, g Generated) map[string]string {
	if len(before) == 0 {
		return heldSet(g.Held)
	}
	out := make(map[string]string, len(before)+len(g.Held))
	for n, r := range before {
		out[n] = r
	}
	for _, r := range g.Resources {
		delete(out, r.Name)
	}
	for _, h := range g.Held {
		out[h.Name] = h.Reason
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// recordUnsent records what a push that sent nothing left held, and the
// snapshot it was generated from.
func (s *DiscoveryServer) recordUnsent(con *Connection, t string, held map[string]string, from uint64) {
	con.mu.Lock()
	if w := con.watched[t]; w != nil {
		w.Held = held
		w.generatedFrom = from
	}
	con.mu.Unlock()
}

// Problems lists, for /debug/warningz, what connected proxies are not
// getting as generated: config they reject (one problem per type and
// error detail), and resources held at their last valid copy because the
// generated one failed validation (one per type, resource and reason). Each
// says how many proxies and names a few; it disappears when those proxies
// are sent a valid version or disconnect. A diag.Board provider.
func (s *DiscoveryServer) Problems() []diag.Problem {
	// detail starts with the verb: "reject ..." or "hold ..."
	type key struct{ subject, detail string }
	proxies := map[key][]string{}
	for _, c := range s.ConnectionSnapshots() {
		for _, w := range c.Watches {
			short := ShortType(w.TypeURL)
			if w.LastNACK != "" {
				k := key{"rejected " + short, "reject " + short + ": " + w.LastNACK}
				proxies[k] = append(proxies[k], c.Proxy.ID)
			}
			for name, reason := range w.Held {
				k := key{short + " " + name, "hold " + short + " " + name + " at their last valid copy: the generated one is invalid and was not sent: " + reason}
				proxies[k] = append(proxies[k], c.Proxy.ID)
			}
		}
	}
	out := make([]diag.Problem, 0, len(proxies))
	for k, ids := range proxies {
		sort.Strings(ids)
		sample := ids
		if len(sample) > 3 {
			sample = sample[:3]
		}
		msg := fmt.Sprintf("%d proxies %s (%s", len(ids), k.detail, strings.Join(sample, ", "))
		if len(ids) > len(sample) {
			msg += ", …"
		}
		out = append(out, diag.Problem{Severity: diag.Error, Source: "xds", Subject: k.subject, Message: msg + ")"})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Subject != out[j].Subject {
			return out[i].Subject < out[j].Subject
		}
		return out[i].Message < out[j].Message
	})
	return out
}
