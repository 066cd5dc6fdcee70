package main

const kindTmpl = `package kind

// Kind is one kind of configuration.
type Kind uint8

const (
{{- range $i, $r := .Resources }}
	{{ $r.Identifier }}{{ if eq $i 0 }} Kind = iota{{ end }}
{{- end }}
)

// String returns the identifier of the kind.
func (k Kind) String() string {
	switch k {
{{- range .Resources }}
	case {{ .Identifier }}:
		return "{{ .Identifier }}"
{{- end }}
	}
	return "Unknown"
}

// FromString returns the kind with that identifier.
func FromString(s string) (Kind, bool) {
	switch s {
{{- range .Resources }}
	case "{{ .Identifier }}":
		return {{ .Identifier }}, true
{{- end }}
	}
	return 0, false
}

// All lists every kind in identifier order.
var All = []Kind{
{{- range .Resources }}
	{{ .Identifier }},
{{- end }}
}
`

const gvkTmpl = `package gvk

IMPORTS

var (
{{- range .Resources }}
	{{ .Identifier }} = config.GroupVersionKind{Group: "{{ .Group }}", Version: "{{ .Version }}", Kind: "{{ .Kind }}"}
{{- $r := . }}{{ range .VersionAliases }}
	{{ aliasVar $r.Identifier . }} = config.GroupVersionKind{Group: "{{ $r.Group }}", Version: "{{ . }}", Kind: "{{ $r.Kind }}"}
{{- end }}
{{- end }}
)

// ToKind maps a GVK (canonical or alias) to its kind.
func ToKind(g config.GroupVersionKind) (kind.Kind, bool) {
	switch g {
{{- range .Resources }}
	case {{ .Identifier }}{{ $r := . }}{{ range .VersionAliases }}, {{ aliasVar $r.Identifier . }}{{ end }}:
		return kind.{{ .Identifier }}, true
{{- end }}
	}
	return 0, false
}

// MustToKind is ToKind for GVKs known to be registered.
func MustToKind(g config.GroupVersionKind) kind.Kind {
	k, ok := ToKind(g)
	if !ok {
		panic("unknown GroupVersionKind " + g.String())
	}
	return k
}

// FromKind returns the canonical GVK of a kind.
func FromKind(k kind.Kind) (config.GroupVersionKind, bool) {
	switch k {
{{- range .Resources }}
	case kind.{{ .Identifier }}:
		return {{ .Identifier }}, true
{{- end }}
	}
	return config.GroupVersionKind{}, false
}

// MustFromKind is FromKind for kinds of the enum.
func MustFromKind(k kind.Kind) config.GroupVersionKind {
	g, ok := FromKind(k)
	if !ok {
		panic("unknown kind " + k.String())
	}
	return g
}
`

const gvrTmpl = `package gvr

IMPORTS

var (
{{- range .Resources }}
	{{ .Identifier }} = schema.GroupVersionResource{Group: "{{ .Group }}", Version: "{{ .Version }}", Resource: "{{ .Plural }}"}
{{- $r := . }}{{ range .VersionAliases }}
	{{ aliasVar $r.Identifier . }} = schema.GroupVersionResource{Group: "{{ $r.Group }}", Version: "{{ . }}", Resource: "{{ $r.Plural }}"}
{{- end }}
{{- end }}
)

// ToKind maps a GVR (canonical or alias) to its kind.
func ToKind(g schema.GroupVersionResource) (kind.Kind, bool) {
	switch g {
{{- range .Resources }}
	case {{ .Identifier }}{{ $r := . }}{{ range .VersionAliases }}, {{ aliasVar $r.Identifier . }}{{ end }}:
		return kind.{{ .Identifier }}, true
{{- end }}
	}
	return 0, false
}

// IsClusterScoped reports whether objects of the resource have no namespace.
func IsClusterScoped(g schema.GroupVersionResource) bool {
	switch g {
{{- range .Resources }}{{ if .ClusterScoped }}
	case {{ .Identifier }}{{ $r := . }}{{ range .VersionAliases }}, {{ aliasVar $r.Identifier . }}{{ end }}:
		return true
{{- end }}{{ end }}
	}
	return false
}
`

const collectionsTmpl = `package collections

IMPORTS

var (
{{- range .Resources }}
	{{ .Identifier }} = resource.Builder{
		Identifier: "{{ .Identifier }}",
		Group:      "{{ .Group }}",
		Kind:       "{{ .Kind }}",
		Plural:     "{{ .Plural }}",
		Version:    "{{ .Version }}",
		{{- if .VersionAliases }}
		VersionAliases: []string{ {{- range .VersionAliases }}"{{ . }}", {{ end -}} },
		{{- end }}
		Proto:        "{{ .Proto }}",
		ProtoPackage: "{{ .ProtoPackage }}",
		ReflectType:  reflect.TypeFor[{{ alias .ProtoPackage }}.{{ goType .Proto }}](),
		{{- if .StatusProto }}
		StatusType: reflect.TypeFor[{{ alias .StatusProtoPackage }}.{{ goType .StatusProto }}](),
		{{- end }}
		ClusterScoped: {{ .ClusterScoped }},
		Builtin:       {{ .Builtin }},
		Synthetic:     {{ .Synthetic }},
		Validate:      {{ .ValidateExpr }},
	}.MustBuild()
{{ end }}

	// All holds every kind.
	All = collection.NewSchemasBuilder().
	{{- range .Resources }}
		MustAdd({{ .Identifier }}).
	{{- end }}
		Build()

	// Pilot holds the Istio kinds the control plane stores.
	Pilot = collection.NewSchemasBuilder().
	{{- range .Resources }}{{ if .Pilot }}
		MustAdd({{ .Identifier }}).
	{{- end }}{{ end }}
		Build()

	// GatewayAPI holds the Gateway API kinds.
	GatewayAPI = collection.NewSchemasBuilder().
	{{- range .Resources }}{{ if .GatewayAPI }}
		MustAdd({{ .Identifier }}).
	{{- end }}{{ end }}
		Build()

	// Builtin holds the Kubernetes builtin kinds.
	Builtin = collection.NewSchemasBuilder().
	{{- range .Resources }}{{ if .Builtin }}
		MustAdd({{ .Identifier }}).
	{{- end }}{{ end }}
		Build()

	pilotGatewayAPI = collection.NewSchemasBuilder().
	{{- range .Resources }}{{ if or .Pilot .GatewayAPI }}
		MustAdd({{ .Identifier }}).
	{{- end }}{{ end }}
		Build()
)

// PilotGatewayAPI returns the Pilot kinds plus the Gateway API kinds: the set
// file inputs are parsed with.
func PilotGatewayAPI() collection.Schemas { return pilotGatewayAPI }
`

const crdTmpl = `package crdclient

IMPORTS

// translationMap turns a typed Kubernetes object of each stored kind into a
// config.Config. Spec and Status point into the object: the result shares
// memory with the informer cache and must be treated as read-only.
var translationMap = map[config.GroupVersionKind]func(obj runtime.Object) config.Config{
{{- range .Resources }}{{ if stored . }}
	gvk.{{ .Identifier }}: func(r runtime.Object) config.Config {
		obj := r.(*{{ alias .ClientPackage }}.{{ .Kind }})
		return config.Config{
			Meta: config.Meta{
				GroupVersionKind:  gvk.{{ .Identifier }},
				Name:              obj.Name,
				Namespace:         obj.Namespace,
				Labels:            obj.Labels,
				Annotations:       obj.Annotations,
				ResourceVersion:   obj.ResourceVersion,
				CreationTimestamp: obj.CreationTimestamp.Time,
				OwnerReferences:   obj.OwnerReferences,
				UID:               string(obj.UID),
				Generation:        obj.Generation,
			},
			{{- if wholeObject . }}
			Spec: obj,
			{{- else }}
			Spec: &obj.Spec,
			{{- end }}
			{{- if .StatusProto }}
			Status: &obj.Status,
			{{- end }}
		}
	},
{{- end }}{{ end }}
}

// objectMap builds the typed Kubernetes object of a config, for writes. The
// object gets deep copies of Spec and Status.
var objectMap = map[config.GroupVersionKind]func(cfg config.Config) (runtime.Object, error){
{{- range .Resources }}{{ if stored . }}
	gvk.{{ .Identifier }}: func(cfg config.Config) (runtime.Object, error) {
		spec, ok := cfg.Spec.(*{{ alias .ProtoPackage }}.{{ goType .Proto }})
		if !ok || spec == nil {
			return nil, fmt.Errorf("nil spec for %v/%v", cfg.Name, cfg.Namespace)
		}
		{{- if wholeObject . }}
		obj := spec.DeepCopy()
		{{- else }}
		obj := &{{ alias .ClientPackage }}.{{ .Kind }}{}
		spec.DeepCopyInto(&obj.Spec)
		{{- if .StatusProto }}
		if st, ok := cfg.Status.(*{{ alias .StatusProtoPackage }}.{{ goType .StatusProto }}); ok && st != nil {
			st.DeepCopyInto(&obj.Status)
		}
		{{- end }}
		{{- end }}
		obj.APIVersion = "{{ if .Group }}{{ .Group }}/{{ end }}{{ .Version }}"
		obj.Kind = "{{ .Kind }}"
		setObjectMeta(&obj.ObjectMeta, cfg)
		return obj, nil
	},
{{- end }}{{ end }}
}
`
