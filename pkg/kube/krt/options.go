package krt

import (
	"fmt"
	"reflect"
	"sync/atomic"
)

// CollectionOption configures a collection at construction.
type CollectionOption func(*collectionOptions)

type collectionOptions struct {
	name     string
	stop     <-chan struct{}
	debug    *DebugHandler
	unsynced bool
}

// WithName names the collection (debug output, Metadata).
func WithName(name string) CollectionOption {
	return func(o *collectionOptions) { o.name = name }
}

// WithStop gives the owner's stop channel: every goroutine the collection
// and its handler registrations start exits when it closes. Without it those
// goroutines live as long as the process (registrations still end on
// UnregisterHandler).
func WithStop(stop <-chan struct{}) CollectionOption {
	return func(o *collectionOptions) { o.stop = stop }
}

// WithDebugging registers the collection with h at construction.
func WithDebugging(h *DebugHandler) CollectionOption {
	return func(o *collectionOptions) { o.debug = h }
}

// Unsynced makes a static collection (or static singleton) start unsynced:
// HasSynced stays false until MarkSynced. Other kinds ignore it.
func Unsynced() CollectionOption {
	return func(o *collectionOptions) { o.unsynced = true }
}

var collectionIDs atomic.Uint64

func buildOptions[T any](kind Kind, opts []CollectionOption) (collectionOptions, Metadata) {
	var o collectionOptions
	for _, opt := range opts {
		opt(&o)
	}
	id := collectionIDs.Add(1)
	name := o.name
	if name == "" {
		name = fmt.Sprintf("%s[%v]#%d", kind, reflect.TypeFor[T](), id)
	}
	return o, Metadata{Name: name, Kind: kind, ID: id}
}
