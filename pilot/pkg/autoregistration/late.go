package autoregistration

import (
	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/config/schema/gvk"
	"github.com/meshplane/istiod/pkg/kube/krt"
)

// collectionStore is a store that reports its changes as collections
// (the aggregate store and the CRD client are).
type collectionStore interface {
	Collection(g config.GroupVersionKind) krt.Collection[config.Config]
}

// watchGroups registers again, when a WorkloadGroup is added, the entries
// of this replica's streams that name it, as Istio does: a group deleted
// and created again (its entries garbage-collected with it, as they are
// owned by it) gets the entries of its connected proxies back without
// them reconnecting. It needs auto-registration on and a store that
// reports changes, and works until stop closes.
func (c *Controller) watchGroups(stop <-chan struct{}) {
	if !c.opts.AutoRegistration {
		return
	}
	cs, ok := c.store.(collectionStore)
	if !ok {
		return
	}
	groups := cs.Collection(gvk.WorkloadGroup)
	if groups == nil {
		return
	}
	reg := groups.Register(func(e krt.Event[config.Config]) {
		if e.Event != krt.EventAdd {
			return
		}
		g := e.Latest()
		c.work.add(&task{what: "register the streams of WorkloadGroup " + g.Namespace + "/" + g.Name, run: func() error {
			c.registerGroup(g.Namespace, g.Name)
			return nil
		}})
	})
	<-stop
	reg.UnregisterHandler()
}

// registerGroup registers the entries of the streams naming the group
// (creating those that are missing); failures are logged, as Istio logs
// them, and left to the proxies' next connection.
func (c *Controller) registerGroup(namespace, name string) {
	if c.store.Get(gvk.WorkloadGroup, name, namespace) == nil {
		return // deleted again since
	}
	c.mu.Lock()
	var streams []*streamInfo
	for _, s := range c.streams {
		if s.autoCreated && s.proxy.Metadata.Namespace == namespace && s.proxy.Metadata.AutoRegisterGroup == name {
			streams = append(streams, s)
		}
	}
	c.mu.Unlock()
	for _, s := range streams {
		if err := c.register(s); err != nil {
			log.Errorf("%s: registering with WorkloadGroup %s/%s: %v", s.id, namespace, name, err)
		}
	}
}
