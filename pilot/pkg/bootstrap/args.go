package bootstrap

import (
	"time"

	"github.com/meshplane/istiod/pilot/pkg/xds"
	"github.com/meshplane/istiod/pilot/pkg/xds/pushengine"
	"github.com/meshplane/istiod/pkg/kube/leaderelection"
)

// PilotArgs are the settings of `istiod discovery`, read once from flags and
// environment by the command and passed down as a typed struct.
type PilotArgs struct {
	Namespace string
	Revision  string
	ClusterID string
	PodName   string
	// ClusterAliases map a cluster ID a proxy declares (its CLUSTER_ID
	// metadata) to the cluster it is taken to be in (--clusterAliases,
	// alias=cluster; at most one alias per cluster).
	ClusterAliases map[string]string
	// ClusterRegistriesNamespace is where the remote clusters' secrets are
	// read (--clusterRegistriesNamespace; default POD_NAMESPACE, else
	// istio-system, as pilot-discovery).
	ClusterRegistriesNamespace string
	// CniNamespace is the namespace istio-cni runs in (--cniNamespace;
	// same default).
	CniNamespace string

	// Config sources
	ConfigDir          string
	MeshConfigFile     string
	NetworksConfigFile string
	KubeConfig         string
	Registries         []string
	KubernetesAPIQPS   float32
	KubernetesAPIBurst int
	// EnableGatewayAPI stores Gateway API kinds too (PILOT_ENABLE_GATEWAY_API).
	EnableGatewayAPI bool
	// EnableAmbient serves ztunnel the workload API (PILOT_ENABLE_AMBIENT).
	EnableAmbient bool
	// ScopeGatewayToNamespace: a gateway proxy takes only the Gateways of
	// its namespace (PILOT_SCOPE_GATEWAY_TO_NAMESPACE).
	ScopeGatewayToNamespace bool
	// FilterGatewayClusters: a gateway proxy gets clusters only for the
	// services its routes reach (PILOT_FILTER_GATEWAY_CLUSTER_CONFIG).
	FilterGatewayClusters bool
	// SidecarIngressTLS: a Sidecar ingress listener's tls terminates TLS
	// on its port (ENABLE_TLS_ON_SIDECAR_INGRESS; off as in Istio).
	SidecarIngressTLS bool
	// DualStack: dual-stack proxies listen and bind on both IP families
	// (ISTIO_DUAL_STACK; off as in Istio). IPv4OutboundForIPv6: an
	// IPv6-only proxy's virtualOutbound also listens on 0.0.0.0
	// (ISTIO_ENABLE_IPV4_OUTBOUND_LISTENER_FOR_IPV6_CLUSTERS; off as in Istio).
	DualStack           bool
	IPv4OutboundForIPv6 bool
	// NoMongoFilter, RedisFilter and MySQLFilter switch the protocol
	// filters of outbound TCP chains (PILOT_ENABLE_MONGO_FILTER, on by
	// default; PILOT_ENABLE_REDIS_FILTER and PILOT_ENABLE_MYSQL_FILTER,
	// off by default).
	NoMongoFilter bool
	RedisFilter   bool
	MySQLFilter   bool
	// KeepIdleMemory turns off handing the heap's free pages back to the
	// OS once a push burst is over (ISTIOD_RELEASE_IDLE_MEMORY=false; ours,
	// on by default: see pkg/memrelease).
	KeepIdleMemory bool
	// SharedMeshConfig names a ConfigMap overlaid under the mesh config
	// (SHARED_MESH_CONFIG).
	SharedMeshConfig string
	// InCluster: use the in-cluster config when --kubeconfig is empty
	// (KUBERNETES_SERVICE_HOST is set).
	InCluster bool

	// Listeners
	HTTPAddr       string
	GRPCAddr       string
	SecureGRPCAddr string
	HTTPSAddr      string
	MonitoringAddr string

	Domain string

	Keepalive KeepaliveOptions

	// Profile enables /debug/pprof.
	Profile bool
	// ShutdownDuration bounds graceful shutdown.
	ShutdownDuration time.Duration
	// FileResync is how often the directory source re-reads everything.
	FileResync time.Duration
	// Debounce tunes the push debouncer (PILOT_DEBOUNCE_AFTER,
	// PILOT_DEBOUNCE_MAX, PILOT_ENABLE_EDS_DEBOUNCE).
	Debounce pushengine.DebounceOptions
	// PushThrottle bounds concurrent pushes (PILOT_PUSH_THROTTLE, 0: automatic).
	PushThrottle int
	// SendTimeout bounds each xDS send to a client (PILOT_XDS_SEND_TIMEOUT;
	// 0: none; default xds.DefaultSendTimeout): a client that stops reading
	// loses its stream instead of holding a push slot.
	SendTimeout time.Duration
	// RequestLimit bounds new xDS streams per second
	// (PILOT_MAX_REQUESTS_PER_SECOND; 0: automatic, as Istio: 15 + 5 per
	// core, at most 100; negative: none).
	RequestLimit float64
	// Security configures the CA and the TLS xDS port.
	Security SecurityOptions
	// TLS is the serving certificate from files and the TLS settings of
	// the secure gRPC port and the webhooks (tlsfiles.go).
	TLS TLSOptions
	// Injection configures the sidecar injector (inject.go).
	Injection InjectionOptions
	// GatewayDeployment configures the generation of Gateways'
	// Deployments, Services and ServiceAccounts (gatewaydeployment.go).
	GatewayDeployment GatewayDeploymentOptions
	// AutoRegistration configures the WorkloadEntries of VMs
	// (autoregistration.go).
	AutoRegistration AutoRegistrationOptions
	// Multicluster configures the remote clusters of remote secrets
	// (MulticlusterFromEnv).
	Multicluster MulticlusterOptions
	// IPAllocate configures the addresses of ServiceEntries that declare
	// none (IPAllocateFromEnv).
	IPAllocate IPAllocateOptions
}

// SecurityOptions configure the CA and the TLS port (environment, read
// once by the command).
type SecurityOptions struct {
	// CADir keeps the self-signed root when there is no cluster
	// (ISTIOD_CA_DIR, ours). Empty: ca in StateDir without a cluster,
	// KubeCADir with one (see caDir).
	CADir string
	// StateDir is istiod's directory among the user's state (see
	// UserStateDir), filled by the command from the environment.
	StateDir string
	// PluggedCertDir holds a plugged-in CA (ROOT_CA_DIR, ./etc/cacerts).
	PluggedCertDir string
	// TrustedNodeAccounts are the service accounts (namespace/name) that
	// may have certificates issued for the workloads of their node
	// (CA_TRUSTED_NODE_ACCOUNTS, ztunnel's; none by default, as in Istio).
	TrustedNodeAccounts string
	// DefaultCertTTL and MaxCertTTL of workload certificates
	// (DEFAULT_WORKLOAD_CERT_TTL 24h, MAX_WORKLOAD_CERT_TTL 90 days).
	DefaultCertTTL, MaxCertTTL time.Duration
	// CustomHosts are more SANs of istiod's serving certificate
	// (ISTIOD_CUSTOM_HOST, comma-separated; an IP becomes an IP SAN).
	CustomHosts []string
	// TokenAudiences a service account token must be valid for
	// (TOKEN_AUDIENCES, default istio-ca).
	TokenAudiences []string
	// LeaderElection is how the leader Leases are held (zero: Istio's).
	LeaderElection leaderelection.Timing
	// NoDebugAuth serves the debug endpoints to every caller
	// (ENABLE_DEBUG_ENDPOINT_AUTH=false); otherwise callers off loopback
	// authenticate with a service-account token.
	NoDebugAuth bool
}

// KeepaliveOptions of the gRPC server.
type KeepaliveOptions struct {
	Time                        time.Duration
	Timeout                     time.Duration
	MaxServerConnectionAge      time.Duration
	MaxServerConnectionAgeGrace time.Duration
}

// DefaultArgs returns pilot-discovery's defaults.
func DefaultArgs() PilotArgs {
	return PilotArgs{
		Namespace:                  "istio-system",
		ClusterRegistriesNamespace: "istio-system",
		CniNamespace:               "istio-system",
		ClusterID:                  "Kubernetes",
		MeshConfigFile:             "./etc/istio/config/mesh",
		NetworksConfigFile:         "./etc/istio/config/meshNetworks",
		Registries:                 []string{"Kubernetes"},
		KubernetesAPIQPS:           80,
		KubernetesAPIBurst:         160,
		EnableGatewayAPI:           true,
		HTTPAddr:                   ":8080",
		GRPCAddr:                   ":15010",
		SecureGRPCAddr:             ":15012",
		HTTPSAddr:                  ":15017",
		MonitoringAddr:             ":15014",
		Domain:                     "cluster.local",
		Keepalive: KeepaliveOptions{
			Time:                        30 * time.Second,
			Timeout:                     10 * time.Second,
			MaxServerConnectionAge:      30 * time.Minute,
			MaxServerConnectionAgeGrace: 10 * time.Second,
		},
		Profile:          true,
		ShutdownDuration: 10 * time.Second,
		Security: SecurityOptions{
			PluggedCertDir: "./etc/cacerts",
			TokenAudiences: []string{"istio-ca"},
		},
		FileResync:  30 * time.Second,
		Debounce:    pushengine.DefaultDebounceOptions(),
		SendTimeout: xds.DefaultSendTimeout,
		GatewayDeployment: GatewayDeploymentOptions{Enabled: true, CopyLabelsAnnotations: true,
			ManualDeployment: true},
		AutoRegistration: DefaultAutoRegistrationOptions(),
		Multicluster:     DefaultMulticlusterOptions(),
		IPAllocate:       DefaultIPAllocateOptions(),
	}
}
