package serviceentry

import (
	"strings"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pkg/diag"
	"github.com/meshplane/istiod/pkg/kube/krt"
)

// problemSource is the diag source of the registry's reports.
const problemSource = "serviceentry"

// onServiceEntryEvents turns ServiceEntry changes into XDSUpdater calls:
// for each namespace/host whose service or endpoints changed, a SvcUpdate
// (add, update or delete, judged over every ServiceEntry of the host) and an
// EDSUpdate with the union of their endpoints; then one full push for the
// services that changed. The host's current ServiceEntries are read from
// byHost, which krt updates before it queues the events to this handler: the
// lookup reflects at least these events (possibly later ones, which follow).
func (c *Controller) onServiceEntryEvents(events []krt.Event[seInfo]) {
	var touched []string
	svcChanged := map[string]bool{}
	for _, e := range events {
		cur := e.Latest()
		c.report("ServiceEntry", cur.key, e.New != nil, cur.problems)
		for _, host := range hostsOf(e) {
			key := cur.namespace + "/" + host
			var oldSvc, newSvc *model.Service
			var oldEps, newEps []*model.IstioEndpoint
			if e.Old != nil {
				oldSvc, oldEps = e.Old.service(host), e.Old.endpoints[host]
			}
			if e.New != nil {
				newSvc, newEps = e.New.service(host), e.New.endpoints[host]
			}
			sc := !oldSvc.Equals(newSvc)
			if !sc && model.EndpointsEqual(oldEps, newEps) {
				continue
			}
			if _, seen := svcChanged[key]; !seen {
				touched = append(touched, key)
			}
			svcChanged[key] = svcChanged[key] || sc
		}
	}
	keys := map[model.ConfigKey]struct{}{}
	for _, key := range touched {
		ns, host := splitKey(key)
		infos := c.byHost.Lookup(key)
		was, is := c.known[key], len(infos) > 0
		switch {
		case !is:
			delete(c.known, key)
			if was {
				c.opts.XDSUpdater.SvcUpdate(c.shard, host, ns, model.EventDelete)
			}
		case !was:
			c.known[key] = true
			c.opts.XDSUpdater.SvcUpdate(c.shard, host, ns, model.EventAdd)
		case svcChanged[key]:
			c.opts.XDSUpdater.SvcUpdate(c.shard, host, ns, model.EventUpdate)
		}
		if is {
			c.opts.XDSUpdater.EDSUpdate(c.shard, host, ns, mergeHostEndpoints(infos, host))
		}
		// a DNS service's endpoints are inline in its clusters (CDS), which
		// an endpoint-only push does not resend
		if svcChanged[key] || (is && inlineEndpoints(infos, host)) {
			keys[model.ServiceConfigKey(host, ns)] = struct{}{}
		}
	}
	if len(keys) > 0 {
		c.opts.XDSUpdater.ConfigUpdate(&model.PushRequest{Full: true, ConfigsUpdated: keys,
			Reason: model.NewReasonStats(model.ServiceUpdate)})
	}
}

// inlineEndpoints tells whether a ServiceEntry of the host resolves it by
// DNS, so that its clusters may carry its endpoints.
func inlineEndpoints(infos []seInfo, host string) bool {
	for _, info := range infos {
		if svc := info.service(host); svc != nil && (svc.Resolution == model.DNSLB || svc.Resolution == model.DNSRoundRobinLB) {
			return true
		}
	}
	return false
}

// hostsOf lists the hosts of both sides of an event.
func hostsOf(e krt.Event[seInfo]) []string {
	var out []string
	for _, s := range e.Items() {
		for _, svc := range s.services {
			if !contains(out, svc.Hostname) {
				out = append(out, svc.Hostname)
			}
		}
	}
	return out
}

// onWorkloadEntryEvents reports bad WorkloadEntries and, after the initial
// sync, tells the push engine about the proxies of changed ones.
func (c *Controller) onWorkloadEntryEvents(events []krt.Event[weInfo]) {
	synced := c.workloadEntries.HasSynced()
	for _, e := range events {
		cur := e.Latest()
		c.report("WorkloadEntry", cur.ResourceName(), e.New != nil, cur.problems)
		if !synced {
			continue
		}
		for _, w := range e.Items() {
			if w.valid && !w.wi.DNSServiceEntryOnly {
				c.opts.XDSUpdater.ProxyUpdate(c.opts.ClusterID, w.wi.Endpoint.FirstAddress())
			}
		}
	}
}

// report replaces the problems of one object on the board.
func (c *Controller) report(kindName, key string, present bool, problems []string) {
	if c.opts.Problems == nil {
		return
	}
	if c.opts.ReportCluster {
		key += " (cluster " + c.opts.ClusterID + ")"
	}
	var out []diag.Problem
	if present {
		for _, p := range problems {
			out = append(out, diag.Problem{Severity: diag.Warning, Object: kindName + " " + key, Message: p})
		}
	}
	c.opts.Problems.Report(problemSource, kindName+" "+key, out)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func splitKey(key string) (ns, rest string) {
	ns, rest, _ = strings.Cut(key, "/")
	return ns, rest
}
