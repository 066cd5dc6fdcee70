package aggregate

import (
	"errors"
	"fmt"

	"github.com/meshplane/istiod/pilot/pkg/config/storeview"
	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/config/schema/collection"
	"github.com/meshplane/istiod/pkg/kube/krt"
)

// CollectionStore is a store that exposes each kind as a collection; every
// store joined by the aggregate implements it.
type CollectionStore interface {
	model.ConfigStoreController
	// Collection returns the collection of a kind, nil when the store does
	// not hold it.
	Collection(g config.GroupVersionKind) krt.Collection[config.Config]
}

// Store is the joined view. It is immutable after construction.
type Store struct {
	*storeview.View
	schemas collection.Schemas
	stores  []CollectionStore
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
	s := &Store{View: storeview.New(), stores: stores, writer: writer}
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
		s.Add(g, krt.JoinCollection(cs, kopts...))
	}
	return s, nil
}

// Schemas is the union of the stores' kinds, in store order.
func (s *Store) Schemas() collection.Schemas { return s.schemas }

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
	return s.CollectionsSynced()
}
