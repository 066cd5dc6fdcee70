package kube

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/meshplane/istiod/pilot/pkg/model"
)

var cc = conversionContext{clusterID: "c1", domainSuffix: "cluster.local", trustDomain: "td"}

func svcOf(mut func(s *corev1.Service)) *corev1.Service {
	s := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "reviews", Namespace: "bookinfo", ResourceVersion: "7",
			CreationTimestamp: metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)), Labels: map[string]string{"app": "reviews"}},
		Spec: corev1.ServiceSpec{ClusterIP: "10.0.0.1", Selector: map[string]string{"app": "reviews"},
			Ports: []corev1.ServicePort{{Name: "http", Port: 9080, Protocol: corev1.ProtocolTCP}}},
	}
	if mut != nil {
		mut(s)
	}
	return s
}

func str(s string) *string { return &s }

var local = corev1.ServiceInternalTrafficPolicyLocal

// convertCases are the mapping rules of a Service, one case each.
var convertCases = []struct {
	name  string
	mut   func(*corev1.Service)
	check func(t *testing.T, s *model.Service, problems []string)
}{
	{"cluster IP", nil, func(t *testing.T, s *model.Service, _ []string) {
		if s.Hostname != "reviews.bookinfo.svc.cluster.local" || s.DefaultAddress != "10.0.0.1" ||
			s.ClusterVIPs.For("c1")[0] != "10.0.0.1" || s.Resolution != model.ClientSideLB || s.MeshExternal ||
			s.Attributes.Type != "ClusterIP" || s.Attributes.ServiceRegistry != model.Kubernetes ||
			s.Attributes.LabelSelectors["app"] != "reviews" || s.Attributes.Labels["app"] != "reviews" ||
			s.ResourceVersion != "7" || s.CreationTime.Year() != 2026 || s.Attributes.ObjectName != "" {
			t.Fatalf("%+v", s)
		}
	}},
	{"dual stack", func(s *corev1.Service) { s.Spec.ClusterIPs = []string{"10.0.0.1", "fd00::1"} }, func(t *testing.T, s *model.Service, _ []string) {
		if len(s.ClusterVIPs.For("c1")) != 2 {
			t.Fatalf("%+v", s.ClusterVIPs)
		}
	}},
	{"headless", func(s *corev1.Service) { s.Spec.ClusterIP = corev1.ClusterIPNone }, func(t *testing.T, s *model.Service, _ []string) {
		if s.Resolution != model.Passthrough || s.DefaultAddress != model.UnspecifiedIP || s.ClusterVIPs.Addresses != nil {
			t.Fatalf("%+v", s)
		}
	}},
	{"external name", func(s *corev1.Service) {
		s.Spec.Type, s.Spec.ExternalName, s.Spec.ClusterIP = corev1.ServiceTypeExternalName, "db.example.com", ""
	}, func(t *testing.T, s *model.Service, _ []string) {
		if s.Resolution != model.Alias || !s.MeshExternal || s.Attributes.ExternalName != "db.example.com" ||
			s.Attributes.Type != "ExternalName" {
			t.Fatalf("%+v", s)
		}
	}},
	{"load balancer", func(s *corev1.Service) {
		s.Spec.Type = corev1.ServiceTypeLoadBalancer
		s.Spec.ExternalIPs = []string{"3.3.3.3"}
		s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "1.2.3.4"}, {Hostname: "lb.example.com"}}
	}, func(t *testing.T, s *model.Service, _ []string) {
		if got := s.Attributes.ClusterExternalAddresses.For("c1"); strings.Join(got, ",") != "1.2.3.4,lb.example.com,3.3.3.3" {
			t.Fatalf("%v", got)
		}
	}},
	{"protocols", func(s *corev1.Service) {
		s.Spec.Ports = []corev1.ServicePort{
			{Name: "grpc-api", Port: 1, Protocol: corev1.ProtocolTCP},
			{Name: "tcp", Port: 2, Protocol: corev1.ProtocolTCP, AppProtocol: str("http")},
			{Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP},
			{Name: "web", Port: 8080, Protocol: corev1.ProtocolTCP},
			{Name: "db", Port: 3306, Protocol: corev1.ProtocolTCP},
		}
	}, func(t *testing.T, s *model.Service, _ []string) {
		want := []string{"GRPC", "HTTP", "UDP", "UnsupportedProtocol", "TCP"}
		for i, p := range s.Ports {
			if string(p.Protocol) != want[i] {
				t.Errorf("port %s: %s, want %s", p.Name, p.Protocol, want[i])
			}
		}
	}},
	{"malformed ports", func(s *corev1.Service) {
		s.Spec.Ports = append(s.Spec.Ports, corev1.ServicePort{Name: "zero", Port: 0}, corev1.ServicePort{Name: "big", Port: 70000},
			corev1.ServicePort{Name: "dup", Port: 9080})
	}, func(t *testing.T, s *model.Service, problems []string) {
		if len(s.Ports) != 1 || len(problems) != 3 || !strings.Contains(problems[0], "spec.ports[1]") {
			t.Fatalf("ports %v problems %v", s.Ports, problems)
		}
	}},
	{"annotations", func(s *corev1.Service) {
		s.Annotations = map[string]string{
			"networking.istio.io/exportTo":             " ., istio-system ",
			KubeServiceAccountsAnnotation:              "a,b",
			CanonicalServiceAccountsAnnotation:         "spiffe://other/x",
			TrafficDistributionAnnotation:              "PreferClose",
			"unrelated.example.com/ignored-annotation": "x",
		}
	}, func(t *testing.T, s *model.Service, _ []string) {
		e := s.Attributes.ExportTo
		if _, ok := e["."]; !ok || len(e) != 2 {
			t.Fatalf("exportTo %v", e)
		}
		want := "spiffe://other/x,spiffe://td/ns/bookinfo/sa/a,spiffe://td/ns/bookinfo/sa/b"
		if got := strings.Join(s.ServiceAccounts, ","); got != want {
			t.Fatalf("service accounts %s", got)
		}
		if s.Attributes.TrafficDistribution != model.TrafficDistributionPreferSameZone {
			t.Fatal("traffic distribution")
		}
	}},
	{"node local and publish not ready", func(s *corev1.Service) {
		s.Spec.InternalTrafficPolicy = &local
		s.Spec.PublishNotReadyAddresses = true
		s.Spec.TrafficDistribution = str("PreferSameNode")
	}, func(t *testing.T, s *model.Service, _ []string) {
		if !s.Attributes.NodeLocal || !s.Attributes.PublishNotReadyAddresses ||
			s.Attributes.TrafficDistribution != model.TrafficDistributionPreferSameNode {
			t.Fatalf("%+v", s.Attributes)
		}
	}},
}

func TestConvertService(t *testing.T) {
	for _, c := range convertCases {
		t.Run(c.name, func(t *testing.T) {
			info := convertService(svcOf(c.mut), cc)
			c.check(t, info.svc, info.problems)
		})
	}
}

func TestWorkloadName(t *testing.T) {
	yes := true
	owned := func(kind, name string, labels map[string]string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Labels: labels,
			OwnerReferences: []metav1.OwnerReference{{Kind: kind, Name: name, Controller: &yes}}}}
	}
	cases := []struct {
		pod  *corev1.Pod
		want string
	}{
		{&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "bare"}}, "bare"},
		{owned("ReplicaSet", "reviews-v1-5d8f7", map[string]string{"pod-template-hash": "5d8f7"}), "reviews-v1"},
		{owned("ReplicaSet", "standalone-rs", nil), "standalone-rs"},
		{owned("Job", "backup-28391230", nil), "backup"},
		{owned("StatefulSet", "db", nil), "db"},
	}
	for _, c := range cases {
		if got := workloadName(c.pod); got != c.want {
			t.Errorf("%s: %q, want %q", c.pod.Name, got, c.want)
		}
	}
}

func TestNodeLocality(t *testing.T) {
	if got := nodeLocality(map[string]string{model.RegionLabel: "r", model.ZoneLabel: "z"}); got != "r/z" {
		t.Fatal(got)
	}
	if got := nodeLocality(map[string]string{model.RegionLabel: "r", model.ZoneLabel: "z", model.SubzoneLabel: "s"}); got != "r/z/s" {
		t.Fatal(got)
	}
	if got := nodeLocality(nil); got != "" {
		t.Fatal(got)
	}
}
