package resource

import (
	"errors"
	"fmt"
	"reflect"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/meshplane/istiod/pkg/config"
)

// ValidateFunc validates one object and returns (warnings, error). It is the
// same type as validation.ValidateFunc.
type ValidateFunc = func(cfg config.Config) (error, error)

// Schema is the full identity card of a kind.
type Schema interface {
	fmt.Stringer
	// GroupVersionKind is the canonical GVK (the version objects are stored under).
	GroupVersionKind() config.GroupVersionKind
	GroupVersionResource() schema.GroupVersionResource
	// GroupVersionAliasKinds lists the accepted GVKs: aliases first, then the canonical one.
	GroupVersionAliasKinds() []config.GroupVersionKind
	IsClusterScoped() bool
	IsSynthetic() bool
	IsBuiltin() bool
	Identifier() string
	Kind() string
	Plural() string
	Group() string
	Version() string
	APIVersion() string
	Proto() string
	ProtoPackage() string
	// NewInstance returns a new empty Spec of the registered Go type (a pointer).
	NewInstance() (config.Spec, error)
	// Status returns a new empty Status, or an error when the kind has none.
	Status() (config.Status, error)
	// StatusKind is the Go type name of the Status ("" when none).
	StatusKind() string
	ValidateConfig(cfg config.Config) (error, error)
	Equal(other Schema) bool
}

// Builder holds the facts of one kind; Build checks them and returns a Schema.
type Builder struct {
	Identifier     string
	Group          string
	Kind           string
	Plural         string
	Version        string
	VersionAliases []string
	Proto          string
	ProtoPackage   string
	ClusterScoped  bool
	Builtin        bool
	Synthetic      bool
	// ReflectType is the (non-pointer) Go type of Spec.
	ReflectType reflect.Type
	// StatusType is the (non-pointer) Go type of Status, nil when the kind has none.
	StatusType reflect.Type
	Validate   ValidateFunc
}

// Build validates the builder and returns the schema.
func (b Builder) Build() (Schema, error) {
	s := &schemaImpl{b: b}
	if b.Identifier == "" {
		s.b.Identifier = b.Kind
	}
	if err := s.check(); err != nil {
		return nil, err
	}
	return s, nil
}

// MustBuild is Build that panics on an invalid builder; generated code uses it
// at init, where a failure is a bug in metadata.yaml.
func (b Builder) MustBuild() Schema {
	s, err := b.Build()
	if err != nil {
		panic(err)
	}
	return s
}

type schemaImpl struct {
	b Builder
}

var _ Schema = (*schemaImpl)(nil)

func (s *schemaImpl) check() error {
	var errs []error
	if s.b.Kind == "" {
		errs = append(errs, errors.New("kind is required"))
	}
	if s.b.Plural == "" {
		errs = append(errs, fmt.Errorf("%s: plural is required", s.b.Kind))
	}
	if s.b.Version == "" {
		errs = append(errs, fmt.Errorf("%s: version is required", s.b.Kind))
	}
	if s.b.ReflectType == nil {
		errs = append(errs, fmt.Errorf("%s: proto type %q is not registered", s.b.Kind, s.b.Proto))
	}
	if s.b.Validate == nil {
		errs = append(errs, fmt.Errorf("%s: validate function is required", s.b.Kind))
	}
	return errors.Join(errs...)
}

func (s *schemaImpl) GroupVersionKind() config.GroupVersionKind {
	return config.GroupVersionKind{Group: s.b.Group, Version: s.b.Version, Kind: s.b.Kind}
}

func (s *schemaImpl) GroupVersionResource() schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: s.b.Group, Version: s.b.Version, Resource: s.b.Plural}
}

func (s *schemaImpl) GroupVersionAliasKinds() []config.GroupVersionKind {
	out := make([]config.GroupVersionKind, 0, len(s.b.VersionAliases)+1)
	for _, v := range s.b.VersionAliases {
		g := s.GroupVersionKind()
		g.Version = v
		out = append(out, g)
	}
	return append(out, s.GroupVersionKind())
}

func (s *schemaImpl) IsClusterScoped() bool { return s.b.ClusterScoped }
func (s *schemaImpl) IsSynthetic() bool     { return s.b.Synthetic }
func (s *schemaImpl) IsBuiltin() bool       { return s.b.Builtin }
func (s *schemaImpl) Identifier() string    { return s.b.Identifier }
func (s *schemaImpl) Kind() string          { return s.b.Kind }
func (s *schemaImpl) Plural() string        { return s.b.Plural }
func (s *schemaImpl) Group() string         { return s.b.Group }
func (s *schemaImpl) Version() string       { return s.b.Version }
func (s *schemaImpl) Proto() string         { return s.b.Proto }
func (s *schemaImpl) ProtoPackage() string  { return s.b.ProtoPackage }

func (s *schemaImpl) APIVersion() string { return s.GroupVersionKind().GroupVersion() }

func (s *schemaImpl) NewInstance() (config.Spec, error) {
	if s.b.ReflectType == nil {
		return nil, fmt.Errorf("no Go type registered for %s", s.b.Kind)
	}
	return reflect.New(s.b.ReflectType).Interface(), nil
}

func (s *schemaImpl) Status() (config.Status, error) {
	if s.b.StatusType == nil {
		return nil, errors.New("unknown status type")
	}
	return reflect.New(s.b.StatusType).Interface(), nil
}

func (s *schemaImpl) StatusKind() string {
	if s.b.StatusType == nil {
		return ""
	}
	return s.b.StatusType.Name()
}

func (s *schemaImpl) ValidateConfig(cfg config.Config) (error, error) {
	return s.b.Validate(cfg)
}

func (s *schemaImpl) Equal(o Schema) bool {
	return o != nil && s.GroupVersionKind() == o.GroupVersionKind() && s.Identifier() == o.Identifier()
}

func (s *schemaImpl) String() string {
	return fmt.Sprintf("[Schema](%s, %q, %s)", s.b.Identifier, s.b.ProtoPackage, s.b.Proto)
}
