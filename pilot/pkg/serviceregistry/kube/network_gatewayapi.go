package kube

import (
	"strconv"
	"sync"

	"istio.io/api/annotation"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/client-go/tools/cache"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pkg/config/schema/gvr"
	"github.com/meshplane/istiod/pkg/kube"
	"github.com/meshplane/istiod/pkg/kube/krt"
)

// This file finds network gateways in Gateway API Gateways of the cluster,
// as Istio's kube registry does for sidecars and gateways
// (PILOT_MULTI_NETWORK_DISCOVER_GATEWAY_API, on by default; off
// (Options.NoGatewayAPINetworks), as in Istio, no Gateway is read at all:
// neither the Gateway informer nor the CRD watch that delays it is
// started, and a labelled Gateway is no network gateway):
//
//   - a Gateway labelled topology.istio.io/network is a gateway of that
//     network, running as the service account its
//     gateway.istio.io/service-account annotation names, else
//     "<name>-istio-remote" for class istio-remote, else its name;
//   - a Gateway of class istio-remote (one standing for a gateway whose
//     cluster this control plane cannot read) counts only in the config
//     cluster's registry;
//   - its addresses are those of spec.addresses whose type is IPAddress or
//     Hostname (the status is not read: the Service Istio deploys for a
//     Gateway carries its labels and is found as a Service gateway);
//   - each address makes one mTLS gateway per auto-passthrough listener (TLS
//     set, and the gateway.istio.io/listener-protocol option is
//     auto-passthrough or the port is the networking.istio.io/gatewayPort
//     label's, 15443 by default) on the listener's port, and one HBONE
//     gateway per HBONE listener, whose mTLS and HBONE ports are both the
//     listener's.
//
// The Gateways are read once their CRD is established: a cluster without
// Gateway API has no such gateways and syncs without them.

const (
	// remoteGatewayClass is the class of Gateways standing for a gateway in
	// a cluster the control plane cannot read.
	remoteGatewayClass = "istio-remote"
	// listenerModeOption is the listener TLS option naming its mode.
	listenerModeOption = "gateway.istio.io/listener-protocol"
	// gatewayCRDName is the CRD the Gateways are read from.
	gatewayCRDName = "gateways.gateway.networking.k8s.io"
)

// resourceGatewayKey keys a Gateway's gateways apart from Services' in the
// joined gateway collection.
func resourceGatewayKey(ns, name string) string { return "Gateway/" + ns + "/" + name }

// buildResourceGateways is the transform Gateway → the network gateways it
// is.
func (c *Controller) buildResourceGateways(_ krt.HandlerContext, gw *gatewayv1.Gateway) *serviceGateways {
	gws := gatewaysFromResource(gw, c.opts.ClusterID, c.opts.ConfigCluster)
	if len(gws) == 0 {
		return nil
	}
	return &serviceGateways{key: resourceGatewayKey(gw.Namespace, gw.Name), gateways: gws}
}

// gatewaysFromResource lists the network gateways a Gateway is, sorted,
// without duplicates.
func gatewaysFromResource(gw *gatewayv1.Gateway, cluster string, configCluster bool) []model.NetworkGateway {
	nw := gw.Labels[model.NetworkLabel]
	if nw == "" {
		return nil
	}
	if !configCluster && gw.Spec.GatewayClassName == remoteGatewayClass {
		return nil
	}
	base := model.NetworkGateway{Network: nw, Cluster: cluster,
		ServiceAccount: model.NamespacedName{Namespace: gw.Namespace, Name: gatewayServiceAccount(gw)}}
	var out []model.NetworkGateway
	for _, addr := range gw.Spec.Addresses {
		if addr.Type == nil || (*addr.Type != gatewayv1.IPAddressType && *addr.Type != gatewayv1.HostnameAddressType) {
			continue
		}
		for _, l := range gw.Spec.Listeners {
			if autoPassthrough(gw.Labels, l) {
				g := base
				g.Addr, g.Port = addr.Value, uint32(l.Port)
				out = append(out, g)
			}
			if l.Protocol == "HBONE" {
				g := base
				g.Addr, g.Port, g.HBONEPort = addr.Value, uint32(l.Port), uint32(l.Port)
				out = append(out, g)
			}
		}
	}
	return compactGateways(out)
}

// autoPassthrough reports whether a listener of a network Gateway passes
// mTLS through by SNI: TLS set, and its mode option says so or its port is
// the gateway port.
func autoPassthrough(labels map[string]string, l gatewayv1.Listener) bool {
	if l.TLS == nil {
		return false
	}
	if string(l.TLS.Options[listenerModeOption]) == "auto-passthrough" {
		return true
	}
	if _, ok := labels[model.NetworkLabel]; !ok {
		return false
	}
	want := strconv.Itoa(model.DefaultNetworkGatewayPort)
	if p, ok := labels[model.GatewayPortLabel]; ok {
		want = p
	}
	return strconv.Itoa(int(l.Port)) == want
}

// gatewayServiceAccount is the service account a Gateway's deployment runs
// as.
func gatewayServiceAccount(gw *gatewayv1.Gateway) string {
	if sa := gw.Annotations[annotation.GatewayServiceAccount.Name]; sa != "" {
		return sa
	}
	if gw.Spec.GatewayClassName == remoteGatewayClass {
		return gw.Name + "-" + remoteGatewayClass
	}
	return gw.Name
}

func compactGateways(gws []model.NetworkGateway) []model.NetworkGateway {
	if len(gws) == 0 {
		return nil
	}
	out := model.SortGateways(gws)
	j := 0
	for i := range out {
		if i == 0 || out[i] != out[j-1] {
			out[j] = out[i]
			j++
		}
	}
	return out[:j]
}

// gatewayAPIInput is the cluster's Gateways, read once the Gateway CRD is
// established (Istio's delayed informer): until then, and for good in a
// cluster without Gateway API, it is empty and synced.
// Nil when opts.NoGatewayAPINetworks.
func gatewayAPIInput(client kube.Client, opts Options) krt.Collection[*gatewayv1.Gateway] {
	if opts.NoGatewayAPINetworks {
		return nil
	}
	kopts := []krt.CollectionOption{krt.WithName("kube-registry/informer/Gateways"), krt.Unsynced()}
	if opts.Krt != nil {
		kopts = append(kopts, krt.WithDebugging(opts.Krt))
	}
	out := krt.NewStaticCollection[*gatewayv1.Gateway](nil, kopts...)
	stop := opts.Stop
	if stop == nil {
		stop = make(chan struct{})
	}
	d := &delayedGateways{client: client, out: out, stop: stop}
	crds, err := client.Informer(gvr.CustomResourceDefinition)
	if err != nil {
		scope.Warnf("cluster %s: cannot watch CRDs, no Gateway is read for network gateways: %v", opts.ClusterID, err)
		out.MarkSynced()
		return out
	}
	reg, err := crds.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    d.observe,
		UpdateFunc: func(_, o any) { d.observe(o) },
	})
	if err != nil {
		out.MarkSynced()
		return out
	}
	go func() {
		if !cache.WaitForCacheSync(stop, reg.HasSynced) {
			return
		}
		d.mu.Lock()
		started := d.started
		d.mu.Unlock()
		if !started {
			out.MarkSynced()
		}
	}()
	return out
}

// delayedGateways starts the Gateway informer when the CRD is established.
type delayedGateways struct {
	client kube.Client
	out    krt.StaticCollection[*gatewayv1.Gateway]
	stop   <-chan struct{}

	mu      sync.Mutex
	started bool
}

func (d *delayedGateways) observe(o any) {
	crd, ok := o.(*apiextv1.CustomResourceDefinition)
	if !ok || crd.Name != gatewayCRDName || !crdServes(crd, gvr.KubernetesGateway.Version) {
		return
	}
	d.mu.Lock()
	if d.started {
		d.mu.Unlock()
		return
	}
	d.started = true
	d.mu.Unlock()
	inf, err := d.client.Informer(gvr.KubernetesGateway)
	if err != nil {
		scope.Warnf("Gateway informer: %v", err)
		d.out.MarkSynced()
		return
	}
	reg, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    d.set,
		UpdateFunc: func(_, o any) { d.set(o) },
		DeleteFunc: d.delete,
	})
	if err != nil {
		d.out.MarkSynced()
		return
	}
	d.client.Start(d.stop)
	go func() {
		if cache.WaitForCacheSync(d.stop, reg.HasSynced) {
			d.out.MarkSynced()
		}
	}()
}

func (d *delayedGateways) set(o any) {
	if gw, ok := o.(*gatewayv1.Gateway); ok {
		d.out.Set(gw)
	}
}

func (d *delayedGateways) delete(o any) {
	if t, ok := o.(cache.DeletedFinalStateUnknown); ok {
		o = t.Obj
	}
	if gw, ok := o.(*gatewayv1.Gateway); ok {
		d.out.Delete(gw.Namespace + "/" + gw.Name)
	}
}

// crdServes reports whether a CRD is established and serves version.
func crdServes(crd *apiextv1.CustomResourceDefinition, version string) bool {
	established := false
	for _, c := range crd.Status.Conditions {
		if c.Type == apiextv1.Established && c.Status == apiextv1.ConditionTrue {
			established = true
		}
	}
	if !established {
		return false
	}
	for _, v := range crd.Spec.Versions {
		if v.Name == version && v.Served {
			return true
		}
	}
	return false
}

// networkGatewayCollection is every network gateway of the cluster: those
// of Services and those of Gateways (keyed apart; none of Gateways with
// NoGatewayAPINetworks, even when Inputs hold some).
func (c *Controller) networkGatewayCollection(in Inputs) krt.Collection[serviceGateways] {
	fromServices := krt.NewCollection(c.services, c.buildGateways, c.krtOpts("kube-registry/network-gateways/services")...)
	if in.Gateways == nil || c.opts.NoGatewayAPINetworks {
		return fromServices
	}
	fromGateways := krt.NewCollection(in.Gateways, c.buildResourceGateways, c.krtOpts("kube-registry/network-gateways/gateways")...)
	return krt.JoinCollection([]krt.Collection[serviceGateways]{fromServices, fromGateways},
		c.krtOpts("kube-registry/network-gateways")...)
}
