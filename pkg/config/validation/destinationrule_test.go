package validation_test

import (
	"testing"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"
	networking "istio.io/api/networking/v1alpha3"
	typev1beta1 "istio.io/api/type/v1beta1"

	"github.com/meshplane/istiod/pkg/config/validation"
)

func drPolicy(tp *networking.TrafficPolicy) *networking.DestinationRule {
	return &networking.DestinationRule{Host: "reviews", TrafficPolicy: tp}
}

func drTLS(t *networking.ClientTLSSettings) *networking.DestinationRule {
	return drPolicy(&networking.TrafficPolicy{Tls: t})
}

func drLB(lb *networking.LoadBalancerSettings) *networking.DestinationRule {
	return drPolicy(&networking.TrafficPolicy{LoadBalancer: lb})
}

func TestValidateDestinationRuleValid(t *testing.T) {
	netRun(t, validation.ValidateDestinationRule, []netCase{
		{name: "subsets and policy", spec: &networking.DestinationRule{
			Host: "reviews.default.svc.cluster.local",
			TrafficPolicy: &networking.TrafficPolicy{
				ConnectionPool: &networking.ConnectionPoolSettings{
					Tcp:  &networking.ConnectionPoolSettings_TCPSettings{MaxConnections: 100, ConnectTimeout: durationpb.New(3e7)},
					Http: &networking.ConnectionPoolSettings_HTTPSettings{Http1MaxPendingRequests: 10, MaxRetries: 3},
				},
				OutlierDetection: &networking.OutlierDetection{
					Consecutive_5XxErrors: wrapperspb.UInt32(7), Interval: durationpb.New(5e9),
					BaseEjectionTime: durationpb.New(15e9), MaxEjectionPercent: 50,
				},
				LoadBalancer: &networking.LoadBalancerSettings{
					LbPolicy: &networking.LoadBalancerSettings_Simple{Simple: networking.LoadBalancerSettings_LEAST_REQUEST},
				},
				Tls: &networking.ClientTLSSettings{Mode: networking.ClientTLSSettings_ISTIO_MUTUAL},
				PortLevelSettings: []*networking.TrafficPolicy_PortTrafficPolicy{{
					Port: &networking.PortSelector{Number: 80},
					Tls:  &networking.ClientTLSSettings{Mode: networking.ClientTLSSettings_SIMPLE, Sni: "a.com"},
				}},
			},
			Subsets: []*networking.Subset{
				{Name: "v1", Labels: map[string]string{"version": "v1"}},
				{Name: "v2", Labels: map[string]string{"version": "v2"}},
			},
		}},
		{name: "wildcard host", spec: &networking.DestinationRule{Host: "*.example.com"}},
		{name: "mutual with credentialName", spec: drTLS(&networking.ClientTLSSettings{
			Mode: networking.ClientTLSSettings_MUTUAL, CredentialName: "client-cert",
		})},
		{name: "consistent hash", spec: drLB(&networking.LoadBalancerSettings{LbPolicy: &networking.LoadBalancerSettings_ConsistentHash{
			ConsistentHash: &networking.LoadBalancerSettings_ConsistentHashLB{
				HashKey:       &networking.LoadBalancerSettings_ConsistentHashLB_HttpHeaderName{HttpHeaderName: "x-user"},
				HashAlgorithm: &networking.LoadBalancerSettings_ConsistentHashLB_RingHash_{RingHash: &networking.LoadBalancerSettings_ConsistentHashLB_RingHash{MinimumRingSize: 1024}},
			},
		}})},
		{name: "locality distribute", spec: drLB(&networking.LoadBalancerSettings{LocalityLbSetting: &networking.LocalityLoadBalancerSetting{
			Distribute: []*networking.LocalityLoadBalancerSetting_Distribute{{From: "us-west/zone1/*", To: map[string]uint32{"us-west/zone1/*": 80, "us-west/zone2/*": 20}}},
		}})},
		{name: "selector exported to own namespace", spec: &networking.DestinationRule{
			Host: "a", ExportTo: []string{"."}, WorkloadSelector: &typev1beta1.WorkloadSelector{MatchLabels: map[string]string{"app": "a"}},
		}},
	})
}

func TestValidateDestinationRuleInvalid(t *testing.T) {
	netRun(t, validation.ValidateDestinationRule, []netCase{
		{name: "host required", spec: &networking.DestinationRule{}, errs: []string{"spec.host: empty domain name not allowed (host is required)"}},
		{name: "bad host", spec: &networking.DestinationRule{Host: "a..b"}, errs: []string{`spec.host: invalid host "a..b"`}},
		{name: "subsets", spec: &networking.DestinationRule{Host: "a", Subsets: []*networking.Subset{
			{Name: "v1"}, {Name: "v1"}, {Name: "V_2"}, nil, {Name: "v3", Labels: map[string]string{"bad key!": "x"}},
		}}, errs: []string{
			`spec.subsets[1].name: duplicate subset names: v1`,
			`spec.subsets[2].name: subset name is invalid: V_2 (must be a DNS-1123 label)`,
			"spec.subsets[3]: subset may not be null",
			`spec.subsets[4].labels: invalid tag key: "bad key!"`,
		}},
		{name: "empty traffic policy", spec: drPolicy(&networking.TrafficPolicy{}),
			errs: []string{"spec.trafficPolicy: traffic policy must have at least one field"}},
		{name: "connection pool", spec: drPolicy(&networking.TrafficPolicy{ConnectionPool: &networking.ConnectionPoolSettings{
			Http: &networking.ConnectionPoolSettings_HTTPSettings{Http1MaxPendingRequests: -1, IdleTimeout: durationpb.New(0)},
			Tcp:  &networking.ConnectionPoolSettings_TCPSettings{MaxConnections: -2},
		}}), errs: []string{
			"spec.trafficPolicy.connectionPool.http.http1MaxPendingRequests: http1 max pending requests must be non-negative",
			"spec.trafficPolicy.connectionPool.http.idleTimeout: duration must be greater than 1ms",
			"spec.trafficPolicy.connectionPool.tcp.maxConnections: max connections must be non-negative",
		}},
		{name: "outlier detection", spec: drPolicy(&networking.TrafficPolicy{OutlierDetection: &networking.OutlierDetection{
			MaxEjectionPercent: 150, Interval: durationpb.New(1000), ConsecutiveLocalOriginFailures: wrapperspb.UInt32(3),
		}}), errs: []string{
			"spec.trafficPolicy.outlierDetection.maxEjectionPercent: percentage 150 is not in range 0..100",
			"spec.trafficPolicy.outlierDetection.interval: duration must be greater than 1ms",
			"spec.trafficPolicy.outlierDetection.consecutiveLocalOriginFailures: outlier detection consecutive local origin failures",
		}},
		{name: "mutual tls without certs", spec: drTLS(&networking.ClientTLSSettings{Mode: networking.ClientTLSSettings_MUTUAL}),
			errs: []string{
				"spec.trafficPolicy.tls.clientCertificate: client certificate required for mutual tls",
				"spec.trafficPolicy.tls.privateKey: private key required for mutual tls",
			}},
		{name: "credentialName excludes files", spec: drTLS(&networking.ClientTLSSettings{
			Mode: networking.ClientTLSSettings_SIMPLE, CredentialName: "c", CaCertificates: "/etc/ca.pem",
		}), errs: []string{"spec.trafficPolicy.tls: cannot specify client certificates or CA certificate or CA CRL If credentialName is set"}},
		{name: "insecureSkipVerify with CA", spec: drTLS(&networking.ClientTLSSettings{
			Mode: networking.ClientTLSSettings_SIMPLE, CaCertificates: "/ca.pem", InsecureSkipVerify: wrapperspb.Bool(true),
		}), errs: []string{"spec.trafficPolicy.tls: cannot specify CaCertificates or CredentialName or SubjectAltNames when InsecureSkipVerify is set true"}},
		{name: "configmap credential in other namespace", spec: drTLS(&networking.ClientTLSSettings{
			Mode: networking.ClientTLSSettings_SIMPLE, CredentialName: "configmap://other/ca",
		}), errs: []string{`spec.trafficPolicy.tls.credentialName: invalid configmap:// credentialName: namespace must match the configuration namespace "default"`}},
		{name: "istio mutual with certs warns", spec: drTLS(&networking.ClientTLSSettings{
			Mode: networking.ClientTLSSettings_ISTIO_MUTUAL, ClientCertificate: "/cert.pem",
		}), warns: []string{"spec.trafficPolicy.tls: TLS mode ISTIO_MUTUAL uses Istio certificates"}},
		{name: "disable with settings warns", spec: drTLS(&networking.ClientTLSSettings{Sni: "a.com"}),
			warns: []string{"spec.trafficPolicy.tls: TLS mode DISABLE ignores"}},
		{name: "port level settings", spec: drPolicy(&networking.TrafficPolicy{PortLevelSettings: []*networking.TrafficPolicy_PortTrafficPolicy{
			{Tls: &networking.ClientTLSSettings{Mode: networking.ClientTLSSettings_SIMPLE}},
			{Port: &networking.PortSelector{Number: 80}, Tls: &networking.ClientTLSSettings{Mode: networking.ClientTLSSettings_SIMPLE}},
			{Port: &networking.PortSelector{Number: 80}},
		}}), errs: []string{
			"spec.trafficPolicy.portLevelSettings[0].port: portTrafficPolicy must have valid port",
			"spec.trafficPolicy.portLevelSettings[2].port: duplicate port 80 in portLevelSettings",
			"spec.trafficPolicy.portLevelSettings[2]: port traffic policy must have at least one field",
		}},
		{name: "selector with wider exportTo", spec: &networking.DestinationRule{
			Host: "a", ExportTo: []string{"other"}, WorkloadSelector: &typev1beta1.WorkloadSelector{MatchLabels: map[string]string{"app": "a"}},
		}, errs: []string{"spec.exportTo: destination rule with workload selector cannot have exportTo beyond current namespace"}},
		{name: "exportTo none", spec: &networking.DestinationRule{Host: "a", ExportTo: []string{"~"}},
			errs: []string{"spec.exportTo[0]: exportTo ~ (none) is not allowed for Istio configuration objects"}},
		{name: "selector wildcard", spec: &networking.DestinationRule{
			Host: "a", WorkloadSelector: &typev1beta1.WorkloadSelector{MatchLabels: map[string]string{"app": "*"}},
		}, errs: []string{`spec.workloadSelector.matchLabels[app]: wildcard is not supported in selector: "app=*"`}},
	})
}

func TestValidateDestinationRuleLoadBalancer(t *testing.T) {
	ch := func(c *networking.LoadBalancerSettings_ConsistentHashLB) *networking.DestinationRule {
		return drLB(&networking.LoadBalancerSettings{LbPolicy: &networking.LoadBalancerSettings_ConsistentHash{ConsistentHash: c}})
	}
	loc := func(l *networking.LocalityLoadBalancerSetting) *networking.DestinationRule {
		return drPolicy(&networking.TrafficPolicy{
			LoadBalancer:     &networking.LoadBalancerSettings{LocalityLbSetting: l},
			OutlierDetection: &networking.OutlierDetection{Consecutive_5XxErrors: wrapperspb.UInt32(3)},
		})
	}
	lbp := "spec.trafficPolicy.loadBalancer."
	netRun(t, validation.ValidateDestinationRule, []netCase{
		{name: "cookie needs a name", spec: ch(&networking.LoadBalancerSettings_ConsistentHashLB{
			HashKey: &networking.LoadBalancerSettings_ConsistentHashLB_HttpCookie{HttpCookie: &networking.LoadBalancerSettings_ConsistentHashLB_HTTPCookie{}},
		}), errs: []string{lbp + "consistentHash.httpCookie.name: name required for HttpCookie"}},
		{name: "maglev table size", spec: ch(&networking.LoadBalancerSettings_ConsistentHashLB{
			HashKey:       &networking.LoadBalancerSettings_ConsistentHashLB_UseSourceIp{UseSourceIp: true},
			HashAlgorithm: &networking.LoadBalancerSettings_ConsistentHashLB_Maglev{Maglev: &networking.LoadBalancerSettings_ConsistentHashLB_MagLev{TableSize: 1000}},
		}), errs: []string{lbp + "consistentHash.maglev.tableSize: tableSize must be a prime number for maglev"}},
		{name: "ring size too large", spec: ch(&networking.LoadBalancerSettings_ConsistentHashLB{
			HashKey:       &networking.LoadBalancerSettings_ConsistentHashLB_UseSourceIp{UseSourceIp: true},
			HashAlgorithm: &networking.LoadBalancerSettings_ConsistentHashLB_RingHash_{RingHash: &networking.LoadBalancerSettings_ConsistentHashLB_RingHash{MinimumRingSize: 1 << 30}},
		}), errs: []string{lbp + "consistentHash.ringHash.minimumRingSize: minimumRingSize must be at most 8388608"}},
		{name: "no hash key warns", spec: ch(&networking.LoadBalancerSettings_ConsistentHashLB{}),
			warns: []string{lbp + "consistentHash: consistentHash sets no hash key"}},
		{name: "distribute and failover", spec: loc(&networking.LocalityLoadBalancerSetting{
			Distribute: []*networking.LocalityLoadBalancerSetting_Distribute{{From: "a", To: map[string]uint32{"b": 100}}},
			Failover:   []*networking.LocalityLoadBalancerSetting_Failover{{From: "a", To: "b"}},
		}), errs: []string{lbp + "localityLbSetting: can not simultaneously specify 'distribute' and 'failover'"}},
		{name: "distribute weights", spec: loc(&networking.LocalityLoadBalancerSetting{
			Distribute: []*networking.LocalityLoadBalancerSetting_Distribute{{From: "a/*", To: map[string]uint32{"b": 60, "c": 30}}},
		}), errs: []string{lbp + "localityLbSetting.distribute[0].to: total locality weight 90 != 100"}},
		{name: "overlapping localities", spec: loc(&networking.LocalityLoadBalancerSetting{
			Distribute: []*networking.LocalityLoadBalancerSetting_Distribute{{From: "a/*", To: map[string]uint32{"b": 50, "b/z1": 50}}},
		}), errs: []string{lbp + "localityLbSetting.distribute[0].to: locality b/z1 overlap with previous specified ones"}},
		{name: "failover", spec: loc(&networking.LocalityLoadBalancerSetting{
			Failover: []*networking.LocalityLoadBalancerSetting_Failover{{From: "us", To: "us"}, {From: "us/z1", To: "eu"}},
		}), errs: []string{
			lbp + "localityLbSetting.failover[0]: locality lb failover settings must specify different regions",
			lbp + "localityLbSetting.failover[1]: locality lb failover only specify region",
		}},
		{name: "failover without outlier detection warns", spec: drLB(&networking.LoadBalancerSettings{
			LocalityLbSetting: &networking.LocalityLoadBalancerSetting{Failover: []*networking.LocalityLoadBalancerSetting_Failover{{From: "us", To: "eu"}}},
		}), warns: []string{lbp + "localityLbSetting: outlier detection policy must be provided for failover"}},
	})
}
