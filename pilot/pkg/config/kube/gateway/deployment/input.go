package deployment

import (
	"fmt"
	"maps"
	"strings"

	meshconfig "istio.io/api/mesh/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/meshplane/istiod/pilot/pkg/config/kube/gateway"
	"github.com/meshplane/istiod/pkg/kube/inject"
)

// Names Istio reads on a Gateway and writes on what it generates.
const (
	// FieldManager is the server-side apply field manager of every write.
	FieldManager = "istio.io/gateway-controller"
	// LabelManaged marks a generated object; its value is the controller
	// name with "/" replaced by "-".
	LabelManaged = "gateway.istio.io/managed"
	// LabelGatewayName and LabelGatewayClass name the Gateway of an object.
	LabelGatewayName  = "gateway.networking.k8s.io/gateway-name"
	LabelGatewayClass = "gateway.networking.k8s.io/gateway-class-name"
	// LabelClassDefaults marks a ConfigMap of the system namespace whose
	// overlays apply to every Gateway of the class it names.
	LabelClassDefaults = "gateway.istio.io/defaults-for-class"

	annotationNameOverride      = "gateway.istio.io/name-override"
	annotationServiceAccount    = "gateway.istio.io/service-account"
	annotationServiceType       = "networking.istio.io/service-type"
	annotationControllerVersion = "gateway.istio.io/controller-version"
	labelDataplaneMode          = "istio.io/dataplane-mode"
	labelRevision               = "istio.io/rev"
	labelNetwork                = "topology.istio.io/network"
	infraReservedPrefix         = "gateway.networking.k8s.io/"
	defaultProxyID              = 1337
)

// TemplateInput is what the kube-gateway template renders. The field names
// are those Istio's templates read (.Name, .UID and .Spec through the
// embedded Gateway, .DeploymentName, .Ports, .Values, ...); templates only
// read it.
type TemplateInput struct {
	*gatewayv1.Gateway
	GatewayClass              string
	DeploymentName            string
	ServiceAccount            string
	Ports                     []corev1.ServicePort
	ServiceType               corev1.ServiceType
	ClusterID                 string
	KubeVersion               int
	Revision                  string
	NativeSidecars            bool
	ProxyUID                  int64
	ProxyGID                  int64
	CompliancePolicy          string
	InfrastructureLabels      map[string]string
	InfrastructureAnnotations map[string]string
	GatewayNameLabel          string
	IsEastWestGateway         bool
	ControllerLabel           string

	// From the injection configuration and the mesh.
	ProxyImage  string
	ProxyConfig *meshconfig.ProxyConfig
	MeshConfig  *meshconfig.MeshConfig
	Values      map[string]any
}

// Environment is what the rendering of every Gateway shares: istiod's
// settings (read once in bootstrap) and the cluster's version.
type Environment struct {
	ClusterID string
	Revision  string
	// KubeVersion is the API server's major and minor version as Istio
	// reads it (1.37 is 137; -1 when unknown).
	KubeVersion      int
	NativeSidecars   bool
	CompliancePolicy string
	// CopyLabelsAnnotations copies the Gateway's labels and annotations to
	// what it generates when spec.infrastructure sets none
	// (PILOT_ENABLE_GATEWAY_API_COPY_LABELS_ANNOTATIONS, default true).
	CopyLabelsAnnotations bool
	// QUICListeners adds a UDP port beside every HTTPS listener's
	// (PILOT_ENABLE_QUIC_LISTENERS, default false).
	QUICListeners bool
	// Ambient is ambient mode (Istio's waypoint controllers on): Gateways
	// of istio.io/mesh-controller are deployed from the waypoint template,
	// and what is generated for other classes is labeled
	// istio.io/dataplane-mode=none unless the Gateway chooses.
	Ambient bool
}

// Source is one Gateway with what its rendering reads besides the
// Environment.
type Source struct {
	Gateway *gatewayv1.Gateway
	// Class is the Gateway's class name and Controller its controller.
	Controller string
	// Namespace is the Gateway's namespace (nil when unknown).
	Namespace *corev1.Namespace
	// ListenerSetListeners are the listeners of the ListenerSets the
	// Gateway admits, in order.
	ListenerSetListeners []gatewayv1.Listener
	Config               *inject.Config
	Mesh                 *meshconfig.MeshConfig
	ProxyConfig          *meshconfig.ProxyConfig
}

// DefaultName is the name of a Gateway's Deployment, Service and
// ServiceAccount: <gateway>-<class>.
func DefaultName(gateway, class string) string { return gateway + "-" + class }

// classSettings are what the generation differs in by controller.
type classSettings struct {
	// template is the injection template rendered.
	template string
	// noNameSuffix names the objects after the Gateway alone.
	noNameSuffix bool
	// serviceType is the Service type unless networking.istio.io/service-type says.
	serviceType corev1.ServiceType
}

// classSettingsOf are the controllers whose Gateways are deployed (the mesh
// controller's only in ambient mode: see deployable).
var classSettingsOf = map[string]classSettings{
	gateway.ControllerName:     {template: TemplateName, serviceType: corev1.ServiceTypeLoadBalancer},
	gateway.MeshControllerName: {template: WaypointTemplateName, noNameSuffix: true, serviceType: corev1.ServiceTypeClusterIP},
}

// deployable returns the settings of controller; false when Istio deploys
// nothing for its Gateways in this environment.
func deployable(controller string, env Environment) (classSettings, bool) {
	cs, ok := classSettingsOf[controller]
	if !ok || (controller == gateway.MeshControllerName && !env.Ambient) {
		return classSettings{}, false
	}
	return cs, true
}

// isMeshClass reports whether a class is named as a waypoint's or an
// east-west gateway's: Istio tells them by name when labeling.
func isMeshClass(class string) bool {
	return strings.Contains(class, "waypoint") || strings.Contains(class, "east-west")
}

// NewTemplateInput builds the template input of s as Istio does.
func NewTemplateInput(s Source, env Environment) TemplateInput {
	gw := s.Gateway
	class := string(gw.Spec.GatewayClassName)
	settings, ok := classSettingsOf[s.Controller]
	if !ok {
		settings = classSettingsOf[gateway.ControllerName]
	}
	name := DefaultName(gw.Name, class)
	if settings.noNameSuffix {
		name = gw.Name
	}
	serviceType := settings.serviceType
	if t, ok := gw.Annotations[annotationServiceType]; ok {
		serviceType = corev1.ServiceType(t)
	}
	uid, gid := proxyIDs(s.Namespace)
	in := TemplateInput{
		Gateway:                   gw,
		GatewayClass:              class,
		DeploymentName:            orElse(gw.Annotations[annotationNameOverride], name),
		ServiceAccount:            orElse(gw.Annotations[annotationServiceAccount], name),
		Ports:                     servicePorts(gw.Spec.Listeners, s.ListenerSetListeners, env.QUICListeners),
		ServiceType:               serviceType,
		ClusterID:                 env.ClusterID,
		KubeVersion:               env.KubeVersion,
		Revision:                  env.Revision,
		NativeSidecars:            env.NativeSidecars,
		ProxyUID:                  uid,
		ProxyGID:                  gid,
		CompliancePolicy:          env.CompliancePolicy,
		InfrastructureLabels:      infrastructureLabels(gw, env.CopyLabelsAnnotations),
		InfrastructureAnnotations: infrastructureAnnotations(gw, env.CopyLabelsAnnotations),
		GatewayNameLabel:          LabelGatewayName,
		ControllerLabel:           managedValue(s.Controller),
		ProxyConfig:               s.ProxyConfig,
		MeshConfig:                s.Mesh,
	}
	if env.Ambient && !isMeshClass(class) {
		_, onGateway := gw.Labels[labelDataplaneMode]
		_, onInfra := in.InfrastructureLabels[labelDataplaneMode]
		if !onGateway && !onInfra {
			in.InfrastructureLabels[labelDataplaneMode] = "none"
		}
	}
	if s.Config != nil {
		// a waypoint is on the mesh's network unless its Gateway says
		if nw := globalNetwork(s.Config.Values); nw != "" && isMeshClass(class) {
			if _, ok := gw.Labels[labelNetwork]; !ok {
				in.InfrastructureLabels[labelNetwork] = nw
			}
		}
		in.Values = s.Config.Values
		in.ProxyImage = inject.ProxyImage(s.Config.Values, s.ProxyConfig.GetImage().GetImageType(), gw.Annotations)
	}
	return in
}

// globalNetwork is values.global.network of the injection configuration.
func globalNetwork(values map[string]any) string {
	g, _ := values["global"].(map[string]any)
	nw, _ := g["network"].(string)
	return nw
}

// managedValue is the gateway.istio.io/managed value of a controller.
func managedValue(controller string) string { return strings.ReplaceAll(controller, "/", "-") }

func orElse(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

// infrastructureLabels are spec.infrastructure.labels when set, else (when
// copying) the Gateway's labels; keys under gateway.networking.k8s.io/ of
// spec.infrastructure are dropped. The map is the caller's.
func infrastructureLabels(gw *gatewayv1.Gateway, copyMeta bool) map[string]string {
	if inf := gw.Spec.Infrastructure; inf != nil && inf.Labels != nil {
		return withoutReserved(inf.Labels)
	}
	if copyMeta && gw.Labels != nil {
		return maps.Clone(gw.Labels)
	}
	return map[string]string{}
}

// infrastructureAnnotations are the same for annotations.
func infrastructureAnnotations(gw *gatewayv1.Gateway, copyMeta bool) map[string]string {
	if inf := gw.Spec.Infrastructure; inf != nil && inf.Annotations != nil {
		return withoutReserved(inf.Annotations)
	}
	if copyMeta && gw.Annotations != nil {
		return maps.Clone(gw.Annotations)
	}
	return map[string]string{}
}

func withoutReserved[K ~string, V ~string](m map[K]V) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		if !strings.HasPrefix(string(k), infraReservedPrefix) {
			out[string(k)] = string(v)
		}
	}
	return out
}

// servicePorts are the generated Service's ports: status-port 15021, then
// one per listener port (the first listener of a port names it), named after
// the listener (periods become dashes, at most 63 characters, made unique
// with -<port>), appProtocol the listener's protocol in lower case; with
// QUIC, an HTTPS port gets a UDP twin.
func servicePorts(listeners, fromSets []gatewayv1.Listener, quic bool) []corev1.ServicePort {
	tcp := "tcp"
	out := make([]corev1.ServicePort, 0, len(listeners)+len(fromSets)+1)
	out = append(out, corev1.ServicePort{Name: "status-port", Port: 15021, Protocol: corev1.ProtocolTCP, AppProtocol: &tcp})
	seen := map[int32]bool{}
	used := map[string]bool{"status-port": true}
	all := append(append(make([]gatewayv1.Listener, 0, len(listeners)+len(fromSets)), listeners...), fromSets...)
	for i, l := range all {
		if seen[l.Port] {
			continue
		}
		seen[l.Port] = true
		name := strings.ReplaceAll(string(l.Name), ".", "-")
		if len(name) > 63 {
			name = name[:63]
		}
		if name == "" {
			name = fmt.Sprintf("%s-%d", strings.ToLower(string(l.Protocol)), i)
		}
		name = uniquePortName(name, l.Port, used)
		proto := strings.ToLower(string(l.Protocol))
		out = append(out, corev1.ServicePort{Name: name, Port: l.Port, Protocol: corev1.ProtocolTCP, AppProtocol: &proto})
		if quic && l.Protocol == gatewayv1.HTTPSProtocolType {
			udpProto := proto
			out = append(out, corev1.ServicePort{Name: uniquePortName(name+"-quic", l.Port, used), Port: l.Port,
				Protocol: corev1.ProtocolUDP, AppProtocol: &udpProto})
		}
	}
	return out
}

// uniquePortName truncates name to 63 characters and, when it is taken,
// suffixes -<port> (then x's) until it is not.
func uniquePortName(name string, port int32, used map[string]bool) string {
	if len(name) > 63 {
		name = name[:63]
	}
	candidate := name
	for suffix := fmt.Sprintf("-%d", port); used[candidate]; suffix += "x" {
		base := name
		if len(base)+len(suffix) > 63 {
			base = base[:63-len(suffix)]
		}
		candidate = base + suffix
	}
	used[candidate] = true
	return candidate
}
