package collection

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/config/schema/resource"
)

// Schemas is an immutable ordered set of schemas keyed by canonical GVK.
type Schemas struct {
	byGVK      map[config.GroupVersionKind]resource.Schema
	byAddOrder []resource.Schema
}

// SchemasFor builds a set from the given schemas; duplicates are skipped.
func SchemasFor(schemas ...resource.Schema) Schemas {
	b := NewSchemasBuilder()
	for _, s := range schemas {
		_ = b.Add(s)
	}
	return b.Build()
}

// SchemasBuilder builds a Schemas; Add rejects duplicates.
type SchemasBuilder struct {
	s Schemas
}

// NewSchemasBuilder returns an empty builder.
func NewSchemasBuilder() *SchemasBuilder {
	return &SchemasBuilder{s: Schemas{byGVK: map[config.GroupVersionKind]resource.Schema{}}}
}

// Add adds a schema, failing when its GVK is already present.
func (b *SchemasBuilder) Add(s resource.Schema) error {
	if _, ok := b.s.byGVK[s.GroupVersionKind()]; ok {
		return fmt.Errorf("collection already exists: %v", s.GroupVersionKind())
	}
	b.s.byGVK[s.GroupVersionKind()] = s
	b.s.byAddOrder = append(b.s.byAddOrder, s)
	return nil
}

// MustAdd is Add that panics on a duplicate (a programming error).
func (b *SchemasBuilder) MustAdd(s resource.Schema) *SchemasBuilder {
	if err := b.Add(s); err != nil {
		panic(err)
	}
	return b
}

// Build returns the set; the builder must not be used afterwards.
func (b *SchemasBuilder) Build() Schemas {
	s := b.s
	b.s = Schemas{}
	return s
}

// ForEach calls f for each schema in add order until f returns true.
func (s Schemas) ForEach(f func(resource.Schema) (done bool)) {
	for _, sc := range s.byAddOrder {
		if f(sc) {
			return
		}
	}
}

// All returns the schemas in add order. The slice is a copy.
func (s Schemas) All() []resource.Schema {
	return append([]resource.Schema(nil), s.byAddOrder...)
}

// Len is the number of schemas.
func (s Schemas) Len() int { return len(s.byAddOrder) }

// Kinds returns the kind names in add order.
func (s Schemas) Kinds() []string {
	out := make([]string, 0, len(s.byAddOrder))
	for _, sc := range s.byAddOrder {
		out = append(out, sc.Kind())
	}
	return out
}

// FindByGroupVersionKind matches the canonical GVK exactly.
func (s Schemas) FindByGroupVersionKind(gvk config.GroupVersionKind) (resource.Schema, bool) {
	sc, ok := s.byGVK[gvk]
	return sc, ok
}

// FindByGroupVersionAliasesKind matches the canonical GVK or one of its version
// aliases. Every path that reads external input uses this lookup.
func (s Schemas) FindByGroupVersionAliasesKind(gvk config.GroupVersionKind) (resource.Schema, bool) {
	for _, sc := range s.byAddOrder {
		for _, alias := range sc.GroupVersionAliasKinds() {
			if alias == gvk {
				return sc, true
			}
		}
	}
	return nil, false
}

// FindByGroupKind ignores the version entirely (it matches versions nobody
// declared); use it only where any version is acceptable.
func (s Schemas) FindByGroupKind(gvk config.GroupVersionKind) (resource.Schema, bool) {
	for _, sc := range s.byAddOrder {
		if sc.Group() == gvk.Group && sc.Kind() == gvk.Kind {
			return sc, true
		}
	}
	return nil, false
}

// FindByGroupVersionResource matches group, canonical version and plural.
func (s Schemas) FindByGroupVersionResource(gvr schema.GroupVersionResource) (resource.Schema, bool) {
	for _, sc := range s.byAddOrder {
		if sc.GroupVersionResource() == gvr {
			return sc, true
		}
	}
	return nil, false
}

// Union returns the schemas of s followed by those of o not already in s.
func (s Schemas) Union(o Schemas) Schemas {
	b := NewSchemasBuilder()
	for _, sc := range s.byAddOrder {
		_ = b.Add(sc)
	}
	for _, sc := range o.byAddOrder {
		_ = b.Add(sc)
	}
	return b.Build()
}

// Intersect returns the schemas of s that o also holds, in s's order.
func (s Schemas) Intersect(o Schemas) Schemas {
	b := NewSchemasBuilder()
	for _, sc := range s.byAddOrder {
		if _, ok := o.byGVK[sc.GroupVersionKind()]; ok {
			_ = b.Add(sc)
		}
	}
	return b.Build()
}

// Add returns a new set with the given schemas appended (duplicates skipped).
func (s Schemas) Add(schemas ...resource.Schema) Schemas {
	return s.Union(SchemasFor(schemas...))
}

// Remove returns a new set without the given schemas.
func (s Schemas) Remove(schemas ...resource.Schema) Schemas {
	drop := map[config.GroupVersionKind]bool{}
	for _, sc := range schemas {
		drop[sc.GroupVersionKind()] = true
	}
	b := NewSchemasBuilder()
	for _, sc := range s.byAddOrder {
		if !drop[sc.GroupVersionKind()] {
			_ = b.Add(sc)
		}
	}
	return b.Build()
}
