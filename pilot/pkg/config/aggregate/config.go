// Package aggregate joins several config stores into one: reads see, per
// kind, the union of the stores' objects (an earlier store wins a key several
// hold), and writes go to one designated writer.
package aggregate

import (
	"errors"
	"fmt"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/config/schema/collection"
	"github.com/meshplane/istiod/pkg/kube/krt"
	"github.com/meshplane/istiod/pkg/log"
)

var scope = log.RegisterScope("aggregate", "aggregate config store")

// CollectionStore is a store that exposes each kind as a collection; every
// store joined by the aggregate implements it.
type CollectionStore interface {
	model.ConfigStoreController
	// Collection returns the collection of a kind, nil when the store does
	// not hold it.
	Collection(g config.GroupVersionKind) krt.Collection[config.Config]
}

type kindView struct {
	collection krt.Collection[config.Config]
	index      krt.Index[string, config.Config]
}

// Store is the joined view. It is immutable after construction.
type Store struct {
	schemas collection.Schemas
	stores  []CollectionStore
	kinds   map[config.GroupVersionKind]kindView
	writer  model.ConfigStore
}

var _ CollectionStore = (*Store)(nil)

// Options tune the joined collections.
type Options struct {
	Stop  <-chan struct{}
	Debug *krt.DebugHandler
}

// MakeCache joins stores for reading; writes fail with model.ErrNotWritable.
func MakeCache(stores []CollectionStore, opts Options) (*Store, error) {
	return makeStore(stores, nil, opts)
}

// MakeWriteableCache joins stores for reading and sends every write to writer.
func MakeWriteableCache(stores []CollectionStore, writer model.ConfigStore, opts Options) (*Store, error) {
	if writer == nil {
		return nil, errors.New("aggregate: writer is required")
	}
	return makeStore(stores, writer, opts)
}

func makeStore(stores []CollectionStore, writer model.ConfigStore, opts Options) (*Store, error) {
	if len(stores) == 0 {
		return nil, errors.New("aggregate: no stores")
	}
	s := &Store{stores: stores, writer: writer, kinds: map[config.GroupVersionKind]kindView{}}
	schemas := collection.NewSchemasBuilder().Build()
	for _, st := range stores {
		schemas = schemas.Union(st.Schemas())
	}
	s.schemas = schemas
	for _, sc := range schemas.All() {
		g := sc.GroupVersionKind()
		var cs []krt.Collection[config.Config]
		for _, st := range stores {
			if c := st.Collection(g); c != nil {
				cs = append(cs, c)
			}
		}
		if len(cs) == 0 {
			return nil, fmt.Errorf("aggregate: no store provides a collection for %v", g)
		}
		kopts := []krt.CollectionOption{krt.WithName("aggregate/" + sc.Kind())}
		if opts.Stop != nil {
			kopts = append(kopts, krt.WithStop(opts.Stop))
		}
		if opts.Debug != nil {
			kopts = append(kopts, krt.WithDebugging(opts.Debug))
		}
		j := krt.JoinCollection(cs, kopts...)
		s.kinds[g] = kindView{collection: j, index: krt.NewNamespaceIndex(j)}
	}
	return s, nil
}

// Schemas is the union of the stores' kinds, in store order.
func (s *Store) Schemas() collection.Schemas { return s.schemas }

// Collection returns the joined collection of a kind.
func (s *Store) Collection(g config.GroupVersionKind) krt.Collection[config.Config] {
	if k, ok := s.kinds[g]; ok {
		return k.collection
	}
	return nil
}

// Get returns an object from the joined view; the GVK must be canonical.
func (s *Store) Get(typ config.GroupVersionKind, name, namespace string) *config.Config {
	k, ok := s.kinds[typ]
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

// List returns the joined objects of a kind in a namespace ("" for all).
func (s *Store) List(typ config.GroupVersionKind, namespace string) []config.Config {
	k, ok := s.kinds[typ]
	if !ok {
		return nil
	}
	if namespace == "" {
		return k.collection.List()
	}
	return k.index.Lookup(namespace)
}

// Create goes to the writer.
func (s *Store) Create(cfg config.Config) (string, error) {
	if s.writer == nil {
		return "", model.ErrNotWritable
	}
	return s.writer.Create(cfg)
}

// Update goes to the writer.
func (s *Store) Update(cfg config.Config) (string, error) {
	if s.writer == nil {
		return "", model.ErrNotWritable
	}
	return s.writer.Update(cfg)
}

// UpdateStatus goes to the writer.
func (s *Store) UpdateStatus(cfg config.Config) (string, error) {
	if s.writer == nil {
		return "", model.ErrNotWritable
	}
	return s.writer.UpdateStatus(cfg)
}

// Patch goes to the writer.
func (s *Store) Patch(orig config.Config, f model.PatchFunc) (string, error) {
	if s.writer == nil {
		return "", model.ErrNotWritable
	}
	return s.writer.Patch(orig, f)
}

// Delete goes to the writer.
func (s *Store) Delete(typ config.GroupVersionKind, name, namespace string, rv *string) error {
	if s.writer == nil {
		return model.ErrNotWritable
	}
	return s.writer.Delete(typ, name, namespace, rv)
}

// RegisterEventHandler registers on the joined collection of a kind, so a
// change shadowed by an earlier store's object produces no event.
func (s *Store) RegisterEventHandler(typ config.GroupVersionKind, h model.EventHandler) {
	k, ok := s.kinds[typ]
	if !ok {
		return
	}
	k.collection.Register(model.KrtHandler(h))
}

// Run runs every store until stop closes.
func (s *Store) Run(stop <-chan struct{}) {
	for _, st := range s.stores {
		go st.Run(stop)
	}
	<-stop
}

// HasSynced reports whether every store and joined collection has synced.
func (s *Store) HasSynced() bool {
	for _, st := range s.stores {
		if !st.HasSynced() {
			return false
		}
	}
	for _, k := range s.kinds {
		if !k.collection.HasSynced() {
			return false
		}
	}
	return true
}
