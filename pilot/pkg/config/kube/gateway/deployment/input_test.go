package deployment

import (
	"fmt"
	"maps"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/meshplane/istiod/pilot/pkg/config/kube/gateway"
	"github.com/meshplane/istiod/tests/refdata"
)

func portsString(ps []corev1.ServicePort) string {
	var out []string
	for _, p := range ps {
		out = append(out, fmt.Sprintf("%s:%d/%s:%s", p.Name, p.Port, p.Protocol, *p.AppProtocol))
	}
	return strings.Join(out, ",")
}

func TestServicePorts(t *testing.T) {
	long := strings.Repeat("a", 70)
	ls := []gatewayv1.Listener{
		{Name: "http", Port: 80, Protocol: gatewayv1.HTTPProtocolType},
		{Name: "other-http", Port: 80, Protocol: gatewayv1.HTTPProtocolType}, // same port: one Service port
		{Name: "api.v1", Port: 8080, Protocol: gatewayv1.HTTPProtocolType},
		{Name: "api-v1", Port: 8081, Protocol: gatewayv1.TCPProtocolType},
		{Name: gatewayv1.SectionName(long), Port: 443, Protocol: gatewayv1.HTTPSProtocolType},
	}
	got := portsString(servicePorts(ls, []gatewayv1.Listener{{Name: "set", Port: 9000, Protocol: gatewayv1.TLSProtocolType}}, false))
	want := "status-port:15021/TCP:tcp,http:80/TCP:http,api-v1:8080/TCP:http,api-v1-8081:8081/TCP:tcp," +
		strings.Repeat("a", 63) + ":443/TCP:https,set:9000/TCP:tls"
	if got != want {
		t.Errorf("ports\n got  %s\n want %s", got, want)
	}
	// the UDP twin's name, -quic appended, is cut to 63 characters, taken,
	// so made unique with the port
	quic := portsString(servicePorts([]gatewayv1.Listener{ls[0], ls[4]}, nil, true))
	wantQUIC := "status-port:15021/TCP:tcp,http:80/TCP:http," + strings.Repeat("a", 63) + ":443/TCP:https," +
		strings.Repeat("a", 59) + "-443:443/UDP:https"
	if quic != wantQUIC {
		t.Errorf("QUIC ports\n got  %s\n want %s", quic, wantQUIC)
	}
}

func TestTemplateInput(t *testing.T) {
	gw := &gatewayv1.Gateway{
		ObjectMeta: metav1.ObjectMeta{Name: "edge", Namespace: "shop", Labels: map[string]string{"team": "web"},
			Annotations: map[string]string{annotationNameOverride: "front", annotationServiceAccount: "front-sa",
				annotationServiceType: "ClusterIP"}},
		Spec: gatewayv1.GatewaySpec{GatewayClassName: "istio"},
	}
	in := NewTemplateInput(Source{Gateway: gw, Controller: gateway.ControllerName}, Environment{CopyLabelsAnnotations: true})
	if in.DeploymentName != "front" || in.ServiceAccount != "front-sa" || in.ServiceType != corev1.ServiceTypeClusterIP {
		t.Errorf("names %s %s, type %s", in.DeploymentName, in.ServiceAccount, in.ServiceType)
	}
	if in.InfrastructureLabels["team"] != "web" || in.InfrastructureAnnotations[annotationServiceType] != "ClusterIP" {
		t.Errorf("the Gateway's labels and annotations are not copied: %v %v", in.InfrastructureLabels, in.InfrastructureAnnotations)
	}
	if in.ProxyUID != 1337 || in.ProxyGID != 1337 || in.ControllerLabel != "istio.io-gateway-controller" {
		t.Errorf("uid %d gid %d controller label %s", in.ProxyUID, in.ProxyGID, in.ControllerLabel)
	}
	noCopy := NewTemplateInput(Source{Gateway: gw}, Environment{})
	if len(noCopy.InfrastructureLabels) != 0 || len(noCopy.InfrastructureAnnotations) != 0 {
		t.Errorf("copied although disabled: %v %v", noCopy.InfrastructureLabels, noCopy.InfrastructureAnnotations)
	}
	gw.Spec.Infrastructure = &gatewayv1.GatewayInfrastructure{
		Labels:      map[gatewayv1.LabelKey]gatewayv1.LabelValue{"foo": "bar", "gateway.networking.k8s.io/ignore": "x"},
		Annotations: map[gatewayv1.AnnotationKey]gatewayv1.AnnotationValue{"fizz": "buzz"},
	}
	infra := NewTemplateInput(Source{Gateway: gw}, Environment{CopyLabelsAnnotations: true, Ambient: true})
	if !maps.Equal(infra.InfrastructureLabels, map[string]string{"foo": "bar", labelDataplaneMode: "none"}) ||
		!maps.Equal(infra.InfrastructureAnnotations, map[string]string{"fizz": "buzz"}) {
		t.Errorf("infrastructure %v %v", infra.InfrastructureLabels, infra.InfrastructureAnnotations)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop", Annotations: map[string]string{
		annotationUIDRange: "1000680000/10000", annotationSupplementalGroup: "1000690000/10000,5/2"}}}
	if os := NewTemplateInput(Source{Gateway: gw, Namespace: ns}, Environment{}); os.ProxyUID != 1000689999 || os.ProxyGID != 1000699999 {
		t.Errorf("OpenShift ids %d %d", os.ProxyUID, os.ProxyGID)
	}
}

// The reference template with an IP address (loadBalancerIP) and the
// ClusterIP service type; a customization that renames an object is
// refused.
func TestRenderServiceShape(t *testing.T) {
	src, env := referenceSource(t, refdata.Dir(t, "gateways"))
	gw := src.Gateway.DeepCopy()
	gw.Spec.Addresses = []gatewayv1.GatewaySpecAddress{{Value: "10.0.0.7"}}
	src.Gateway = gw
	objs, err := Render(src, env, TemplateName, nil)
	if err != nil {
		t.Fatal(err)
	}
	svc := objs[2].Raw["spec"].(map[string]any)
	if svc["loadBalancerIP"] != "10.0.0.7" || svc["type"] != "LoadBalancer" {
		t.Errorf("Service spec %v", svc)
	}
	gw.Annotations = map[string]string{annotationServiceType: "ClusterIP"}
	if objs, err = Render(src, env, TemplateName, nil); err != nil {
		t.Fatal(err)
	}
	if svc := objs[2].Raw["spec"].(map[string]any); svc["loadBalancerIP"] != nil || svc["type"] != "ClusterIP" {
		t.Errorf("ClusterIP Service spec %v", svc)
	}
	_, err = Render(src, env, TemplateName, []map[string]string{{"service": "metadata:\n  name: other\n"}})
	if err == nil || !strings.Contains(err.Error(), "illegal metadata change (metadata.name)") {
		t.Errorf("renaming overlay: %v", err)
	}
	_, err = Render(src, env, TemplateName, []map[string]string{{"configMap": "data: {}\n"}})
	if err == nil || !strings.Contains(err.Error(), `unsupported overlay "configMap"`) {
		t.Errorf("unknown overlay: %v", err)
	}
}

func TestSkipReason(t *testing.T) {
	ip, host := gatewayv1.IPAddressType, gatewayv1.HostnameAddressType
	gw := func(mut func(*gatewayv1.Gateway)) *gatewayv1.Gateway {
		g := &gatewayv1.Gateway{ObjectMeta: metav1.ObjectMeta{Name: "g", Namespace: "ns"}}
		mut(g)
		return g
	}
	nsCanary := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns", Labels: map[string]string{labelRevision: "canary"}}}
	cases := []struct {
		name     string
		gw       *gatewayv1.Gateway
		ns       *corev1.Namespace
		revision string
		deploy   bool
	}{
		{"plain", gw(func(*gatewayv1.Gateway) {}), nil, "", true},
		{"one IP", gw(func(g *gatewayv1.Gateway) {
			g.Spec.Addresses = []gatewayv1.GatewaySpecAddress{{Type: &ip, Value: "1.2.3.4"}}
		}), nil, "", true},
		{"a hostname", gw(func(g *gatewayv1.Gateway) {
			g.Spec.Addresses = []gatewayv1.GatewaySpecAddress{{Type: &host, Value: "x"}}
		}), nil, "", false},
		{"two IPs", gw(func(g *gatewayv1.Gateway) {
			g.Spec.Addresses = []gatewayv1.GatewaySpecAddress{{Value: "1.2.3.4"}, {Value: "1.2.3.5"}}
		}), nil, "", false},
		{"controller version 5", gw(func(g *gatewayv1.Gateway) { g.Annotations = map[string]string{annotationControllerVersion: "5"} }), nil, "", true},
		{"controller version 6", gw(func(g *gatewayv1.Gateway) { g.Annotations = map[string]string{annotationControllerVersion: "6"} }), nil, "", false},
		{"controller version unknown", gw(func(g *gatewayv1.Gateway) { g.Annotations = map[string]string{annotationControllerVersion: "v2"} }), nil, "", false},
		{"namespace of another revision", gw(func(*gatewayv1.Gateway) {}), nsCanary, "", false},
		{"namespace of this revision", gw(func(*gatewayv1.Gateway) {}), nsCanary, "canary", true},
		{"unlabeled, not default", gw(func(*gatewayv1.Gateway) {}), nil, "canary", false},
		{"label wins", gw(func(g *gatewayv1.Gateway) { g.Labels = map[string]string{labelRevision: "default"} }), nsCanary, "default", true},
	}
	for _, tc := range cases {
		if got := skipReason(tc.gw, tc.ns, tc.revision, true) == ""; got != tc.deploy {
			t.Errorf("%s: deployed %v, want %v (%s)", tc.name, got, tc.deploy, skipReason(tc.gw, tc.ns, tc.revision, true))
		}
	}
}
