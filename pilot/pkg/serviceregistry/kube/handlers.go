package kube

import (
	"strings"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pkg/diag"
	"github.com/meshplane/istiod/pkg/kube/krt"
)

// headlessEndpointUpdate is Istio's trigger reason for the full push an
// endpoint change of a headless service needs.
const headlessEndpointUpdate model.TriggerReason = "headlessendpoint"

// problemSource is the diag source of the registry's reports.
const problemSource = "kube-registry"

func (c *Controller) registerHandlers() {
	c.registrations = append(c.registrations,
		c.services.RegisterBatch(c.onServiceEvents, true),
		c.slices.RegisterBatch(c.onSliceEvents, true),
		c.workloads.RegisterBatch(c.onWorkloadEvents, false),
		c.gateways.RegisterBatch(c.onGatewayEvents, false),
		countEvents(c.inputs.Services, "Services"),
		countEvents(c.inputs.EndpointSlices, "EndpointSlice"),
		countEvents(c.inputs.Pods, "Pods"),
		countEvents(c.inputs.Nodes, "Nodes"),
		countEvents(c.inputs.Namespaces, "Namespaces"),
	)
}

// onServiceEvents reports each added, changed or deleted service as a
// SvcUpdate, and all of them as one full push keyed by ServiceEntry config
// keys. Services exported nowhere ("~") need no push.
func (c *Controller) onServiceEvents(events []krt.Event[serviceInfo]) {
	keys := map[model.ConfigKey]struct{}{}
	for _, e := range events {
		cur := e.Latest()
		report(c.opts.Problems, "Service", cur.key, e.New, func(s serviceInfo) []string { return s.problems })
		ev := model.EventUpdate
		switch e.Event {
		case krt.EventAdd:
			ev = model.EventAdd
		case krt.EventDelete:
			ev = model.EventDelete
		case krt.EventUpdate:
			if e.Old.svc.Equals(e.New.svc) {
				continue // resource version or problems only
			}
		}
		c.opts.XDSUpdater.SvcUpdate(c.shard, cur.svc.Hostname, cur.svc.Attributes.Namespace, ev)
		if cur.svc.Attributes.ExportTo.IsNone() && (e.Old == nil || e.Old.svc.Attributes.ExportTo.IsNone()) {
			continue // invisible before and after
		}
		keys[model.ServiceConfigKey(cur.svc.Hostname, cur.svc.Attributes.Namespace)] = struct{}{}
	}
	// endpoints from WorkloadEntries follow the service's selector and ports
	c.pushEndpoints(c.serviceEntryPushes(events))
	if len(keys) > 0 {
		c.opts.XDSUpdater.ConfigUpdate(&model.PushRequest{Full: true, ConfigsUpdated: keys,
			Reason: model.NewReasonStats(model.ServiceUpdate)})
	}
}

// onSliceEvents recomputes the endpoints of each service whose slices
// changed — only those — and sends them as one EDSUpdate per service.
func (c *Controller) onSliceEvents(events []krt.Event[sliceInfo]) {
	var services []string
	seen := map[string]bool{}
	for _, e := range events {
		cur := e.Latest()
		report(c.opts.Problems, "EndpointSlice", cur.key, e.New, func(s sliceInfo) []string { return s.problems })
		for _, s := range e.Items() {
			if !seen[s.service] {
				seen[s.service] = true
				services = append(services, s.service)
			}
		}
	}
	headless := c.pushEndpoints(services)
	if len(headless) > 0 {
		c.opts.XDSUpdater.ConfigUpdate(&model.PushRequest{Full: true, ConfigsUpdated: headless,
			Reason: model.NewReasonStats(headlessEndpointUpdate)})
	}
}

// onWorkloadEvents tells the push engine that the proxies of changed pods
// must recompute what they are. Changes before the initial sync are skipped:
// no proxy is served before it.
func (c *Controller) onWorkloadEvents(events []krt.Event[model.WorkloadInstance]) {
	if !c.workloads.HasSynced() {
		return
	}
	seen := map[string]bool{}
	for _, e := range events {
		for _, w := range e.Items() {
			for _, ip := range w.Addresses() {
				if !seen[ip] {
					seen[ip] = true
					c.opts.XDSUpdater.ProxyUpdate(c.opts.ClusterID, ip)
				}
			}
		}
	}
}

// report replaces the problems of one object on the board (cur nil: the
// object is gone, its problems with it).
func report[T any](board *diag.Board, kindName, key string, cur *T, problems func(T) []string) {
	if board == nil {
		return
	}
	var out []diag.Problem
	if cur != nil {
		for _, p := range problems(*cur) {
			out = append(out, diag.Problem{Severity: diag.Warning, Object: kindName + " " + key, Message: p})
		}
	}
	board.Report(problemSource, kindName+" "+key, out)
}

func cutKey(key string) (ns, name string, ok bool) { return strings.Cut(key, "/") }
