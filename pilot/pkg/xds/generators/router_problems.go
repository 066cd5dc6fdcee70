package generators

import (
	"sort"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pilot/pkg/networking/gateway"
	"github.com/meshplane/istiod/pilot/pkg/networking/listener"
	"github.com/meshplane/istiod/pkg/diag"
	"github.com/meshplane/istiod/pkg/monitoring"
)

// gatewaySeen remembers since when each gateway problem has been seen.
type gatewaySeen struct {
	mu    sync.Mutex
	since map[string]time.Time
}

// GatewayProblems returns a /debug/warningz provider: for every connected
// gateway proxy, the Gateway servers its merge dropped (conflicts,
// duplicate hosts) and the servers its listeners left out (no route, a
// certificate that cannot be served). Istio only logs these, mostly at
// debug level.
func (g *SidecarGenerators) GatewayProblems(src ConnectedProxies) func() []diag.Problem {
	seen := &gatewaySeen{since: map[string]time.Time{}}
	return func() []diag.Problem {
		push := src.PushContext()
		if push == nil {
			return nil
		}
		byKey := map[string]diag.Problem{}
		for _, c := range src.Connections() {
			p := c.Proxy()
			if p == nil || p.Type != model.Router {
				continue
			}
			for _, mp := range g.mergedGateway(push, p).Problems {
				byKey["merge|"+mp.Error()] = diag.Problem{Severity: diag.Warning, Source: "gateway", Subject: mp.Gateway,
					Object: "Gateway " + mp.Gateway, Message: mp.Error()}
			}
			var lp []string
			listener.BuildGateway(g.gatewayListenerOptions(p, push, &lp))
			for _, m := range lp {
				byKey["listener|"+m] = diag.Problem{Severity: diag.Warning, Source: "gateway", Subject: p.ID, Message: m}
			}
		}
		return seen.stamp(byKey)
	}
}

// stamp sets Since on each problem (first seen), forgets problems gone,
// and returns them sorted by message.
func (s *gatewaySeen) stamp(byKey map[string]diag.Problem) []diag.Problem {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	out := make([]diag.Problem, 0, len(byKey))
	for k, p := range byKey {
		t, ok := s.since[k]
		if !ok {
			t = now
			s.since[k] = t
			genLog.Warnf("%s", p.Message)
		}
		p.Since = t
		out = append(out, p)
	}
	for k := range s.since {
		if _, ok := byKey[k]; !ok {
			delete(s.since, k)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Message < out[j].Message })
	return out
}

// metricRejectedConfigs is Istio's pilot_total_rejected_configs: one count
// per Gateway server a merge drops, each time a gateway's listeners are
// built (as Istio counts it on every merge).
var metricRejectedConfigs = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "pilot_total_rejected_configs",
	Help: "Total number of configs that Pilot had to reject or ignore.",
}, []string{"type", "name"})

func init() { monitoring.MustRegister(metricRejectedConfigs) }

// recordGatewayProblems puts what a gateway proxy's listeners left out on
// the snapshot's push status (one entry per proxy and problem) and counts
// the merge's drops in pilot_total_rejected_configs.
func recordGatewayProblems(push *model.PushContext, proxy *model.Proxy, m *gateway.Merged, left []string) {
	for _, p := range m.Problems {
		metricRejectedConfigs.WithLabelValues("gateway", p.Gateway).Inc()
		push.AddMetric(model.MetricGatewayServerRejected, proxy.ID+"|"+p.Error(), proxy.ID, p.Error())
	}
	for _, msg := range left {
		push.AddMetric(model.MetricGatewayServerRejected, proxy.ID+"|"+msg, proxy.ID, msg)
	}
}
