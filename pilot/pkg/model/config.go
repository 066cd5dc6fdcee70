package model

import (
	"errors"

	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/config/schema/collection"
	"github.com/meshplane/istiod/pkg/kube/krt"
)

// Event is what happened to a config object.
type Event int

// Events.
const (
	EventAdd Event = iota
	EventUpdate
	EventDelete
)

func (e Event) String() string {
	switch e {
	case EventAdd:
		return "add"
	case EventUpdate:
		return "update"
	case EventDelete:
		return "delete"
	}
	return "unknown"
}

// ErrNotWritable is returned by stores that only read (files, synthetic
// configs) when asked to write.
var ErrNotWritable = errors.New("config store is read-only")

// ErrNotFound is returned when a write targets an object that does not exist.
var ErrNotFound = errors.New("config not found")

// ErrAlreadyExists is returned when Create targets an existing object.
var ErrAlreadyExists = errors.New("config already exists")

// PatchFunc returns the patched copy of a config.
type PatchFunc func(cfg config.Config) config.Config

// ConfigStore reads and writes configuration objects.
//
// Objects returned by Get and List are shared with the store and immutable:
// callers that want to change one DeepCopy it first. Get and List take the
// canonical GVK of a kind only (never a version alias).
type ConfigStore interface {
	// Schemas lists the kinds the store holds.
	Schemas() collection.Schemas
	// Get returns an object, or nil when it is absent or the kind is unknown
	// (the latter is logged as a warning).
	Get(typ config.GroupVersionKind, name, namespace string) *config.Config
	// List returns the objects of a kind in a namespace ("" = all), sorted by
	// namespace then name.
	List(typ config.GroupVersionKind, namespace string) []config.Config
	// Create stores a new object and returns its resource version.
	Create(cfg config.Config) (revision string, err error)
	// Update replaces an object's spec and metadata.
	Update(cfg config.Config) (newRevision string, err error)
	// UpdateStatus replaces an object's status.
	UpdateStatus(cfg config.Config) (newRevision string, err error)
	// Patch applies patchFn to the current object and stores the result.
	Patch(orig config.Config, patchFn PatchFunc) (string, error)
	// Delete removes an object; resourceVersion, when not nil, must match.
	Delete(typ config.GroupVersionKind, name, namespace string, resourceVersion *string) error
}

// EventHandler receives (old, new, event). For add, old is a zero Config;
// for delete, new holds the deleted object and old is a zero Config.
type EventHandler = func(old config.Config, cur config.Config, event Event)

// ConfigStoreController is a ConfigStore that also reports changes.
type ConfigStoreController interface {
	ConfigStore
	// RegisterEventHandler adds a handler for one kind; it must be called
	// before Run.
	RegisterEventHandler(kind config.GroupVersionKind, handler EventHandler)
	// Run starts the store until stop closes.
	Run(stop <-chan struct{})
	// HasSynced reports whether the initial state has been loaded.
	HasSynced() bool
}

// KrtHandler adapts an EventHandler to the events of a collection of configs.
func KrtHandler(h EventHandler) func(krt.Event[config.Config]) {
	return func(e krt.Event[config.Config]) {
		switch e.Event {
		case krt.EventAdd:
			h(config.Config{}, *e.New, EventAdd)
		case krt.EventUpdate:
			h(*e.Old, *e.New, EventUpdate)
		case krt.EventDelete:
			h(config.Config{}, *e.Old, EventDelete)
		}
	}
}
