package memory

import (
	"fmt"
	"strconv"
	"sync"

	"github.com/meshplane/istiod/pilot/pkg/config/storeview"
	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/config/schema/collection"
	"github.com/meshplane/istiod/pkg/kube/krt"
)

// Store keeps configs of the given kinds in memory. Objects handed out are
// immutable; writes store deep copies.
type Store struct {
	*storeview.View
	schemas collection.Schemas
	mu      sync.Mutex // serialises writes so versions are monotonic
	version uint64
	kinds   map[config.GroupVersionKind]*kind
}

type kind struct {
	c krt.StaticCollection[config.Config]
}

// New returns an empty store for the given kinds; it is synced at once.
func New(schemas collection.Schemas, opts ...krt.CollectionOption) *Store {
	s := &Store{View: storeview.New(), schemas: schemas, kinds: map[config.GroupVersionKind]*kind{}}
	for _, sc := range schemas.All() {
		o := append([]krt.CollectionOption{krt.WithName("memory/" + sc.Kind())}, opts...)
		c := krt.NewStaticCollection[config.Config](nil, o...)
		s.kinds[sc.GroupVersionKind()] = &kind{c: c}
		s.Add(sc.GroupVersionKind(), c)
	}
	return s
}

var _ model.ConfigStoreController = (*Store)(nil)

// Schemas returns the kinds held.
func (s *Store) Schemas() collection.Schemas { return s.schemas }

func key(name, namespace string) string {
	if namespace == "" {
		return name
	}
	return namespace + "/" + name
}

func (s *Store) kindOf(cfg config.Config) (*kind, error) {
	k, ok := s.kinds[cfg.GroupVersionKind]
	if !ok {
		return nil, fmt.Errorf("unknown type %v", cfg.GroupVersionKind)
	}
	if cfg.Spec == nil {
		return nil, fmt.Errorf("nil spec for %v/%v", cfg.Name, cfg.Namespace)
	}
	return k, nil
}

func (s *Store) put(k *kind, cfg config.Config) string {
	s.version++
	cp := cfg.DeepCopy()
	cp.ResourceVersion = strconv.FormatUint(s.version, 10)
	k.c.Set(cp)
	return cp.ResourceVersion
}

// Create adds an object; it fails when the object exists.
func (s *Store) Create(cfg config.Config) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k, err := s.kindOf(cfg)
	if err != nil {
		return "", err
	}
	if k.c.GetKey(key(cfg.Name, cfg.Namespace)) != nil {
		return "", fmt.Errorf("%w: %v", model.ErrAlreadyExists, cfg.String())
	}
	return s.put(k, cfg), nil
}

// Update replaces an existing object (resource version must match when set).
func (s *Store) Update(cfg config.Config) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k, err := s.kindOf(cfg)
	if err != nil {
		return "", err
	}
	cur := k.c.GetKey(key(cfg.Name, cfg.Namespace))
	if cur == nil {
		return "", fmt.Errorf("%w: %v", model.ErrNotFound, cfg.String())
	}
	if cfg.ResourceVersion != "" && cfg.ResourceVersion != cur.ResourceVersion {
		return "", fmt.Errorf("conflict: %v has version %s, not %s", cfg.String(), cur.ResourceVersion, cfg.ResourceVersion)
	}
	return s.put(k, cfg), nil
}

// UpdateStatus replaces the status of an existing object.
func (s *Store) UpdateStatus(cfg config.Config) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k, ok := s.kinds[cfg.GroupVersionKind]
	if !ok {
		return "", fmt.Errorf("unknown type %v", cfg.GroupVersionKind)
	}
	cur := k.c.GetKey(key(cfg.Name, cfg.Namespace))
	if cur == nil {
		return "", fmt.Errorf("%w: %v", model.ErrNotFound, cfg.String())
	}
	next := cur.DeepCopy()
	next.Status = config.DeepCopyValue(cfg.Status)
	return s.put(k, next), nil
}

// Patch applies f to a copy of the current object and stores the result.
func (s *Store) Patch(orig config.Config, f model.PatchFunc) (string, error) {
	cur := s.Get(orig.GroupVersionKind, orig.Name, orig.Namespace)
	if cur == nil {
		return "", fmt.Errorf("%w: %v", model.ErrNotFound, orig.String())
	}
	next := f(cur.DeepCopy())
	next.ResourceVersion = ""
	return s.Update(next)
}

// Delete removes an object.
func (s *Store) Delete(typ config.GroupVersionKind, name, namespace string, rv *string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	k, ok := s.kinds[typ]
	if !ok {
		return fmt.Errorf("unknown type %v", typ)
	}
	cur := k.c.GetKey(key(name, namespace))
	if cur == nil {
		return fmt.Errorf("%w: %s %s", model.ErrNotFound, typ.Kind, key(name, namespace))
	}
	if rv != nil && *rv != cur.ResourceVersion {
		return fmt.Errorf("conflict: version %s, not %s", cur.ResourceVersion, *rv)
	}
	k.c.Delete(key(name, namespace))
	return nil
}

// Run does nothing: the store is always synced.
func (s *Store) Run(<-chan struct{}) {}

// HasSynced is always true.
func (s *Store) HasSynced() bool { return true }
