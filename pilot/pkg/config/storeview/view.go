package storeview

import (
	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/kube/krt"
	"github.com/meshplane/istiod/pkg/log"
)

var scope = log.RegisterScope("store", "config stores")

type kindView struct {
	collection krt.Collection[config.Config]
	index      krt.Index[string, config.Config]
}

// View serves reads of the kinds added to it. Add all kinds before sharing
// the view; it is read-only afterwards.
type View struct {
	kinds map[config.GroupVersionKind]kindView
}

// New returns an empty view.
func New() *View { return &View{kinds: map[config.GroupVersionKind]kindView{}} }

// Add serves kind g from c, with a namespace index.
func (v *View) Add(g config.GroupVersionKind, c krt.Collection[config.Config]) {
	v.kinds[g] = kindView{collection: c, index: krt.NewNamespaceIndex(c)}
}

// Collection returns the collection of a kind, or nil.
func (v *View) Collection(g config.GroupVersionKind) krt.Collection[config.Config] {
	if k, ok := v.kinds[g]; ok {
		return k.collection
	}
	return nil
}

// Get returns an object; the GVK must be canonical. An unknown kind gives nil
// and a warning.
func (v *View) Get(typ config.GroupVersionKind, name, namespace string) *config.Config {
	k, ok := v.kinds[typ]
	if !ok {
		scope.Warnf("unknown type: %s", typ)
		return nil
	}
	key := name
	if namespace != "" {
		key = namespace + "/" + name
	}
	return k.collection.GetKey(key)
}

// List returns the objects of a kind in a namespace ("" for all), sorted.
func (v *View) List(typ config.GroupVersionKind, namespace string) []config.Config {
	k, ok := v.kinds[typ]
	if !ok {
		return nil
	}
	if namespace == "" {
		return k.collection.List()
	}
	return k.index.Lookup(namespace)
}

// RegisterEventHandler adds a handler for one kind (ignored for unknown kinds).
func (v *View) RegisterEventHandler(typ config.GroupVersionKind, h model.EventHandler) {
	if k, ok := v.kinds[typ]; ok {
		k.collection.Register(model.KrtHandler(h))
	}
}

// CollectionsSynced reports whether every collection has synced.
func (v *View) CollectionsSynced() bool {
	for _, k := range v.kinds {
		if !k.collection.HasSynced() {
			return false
		}
	}
	return true
}
