package app

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/meshplane/istiod/pilot/pkg/bootstrap"
	"github.com/meshplane/istiod/pkg/config/security"
	"github.com/meshplane/istiod/pkg/kube/inject"
	"github.com/meshplane/istiod/pkg/log"
	"github.com/meshplane/istiod/pkg/memlimit"
	"github.com/meshplane/istiod/pkg/version"
)

// discoveryFlags are pilot-discovery's flags, with its defaults; tf holds
// those that need parsing (tlsFlags).
func addDiscoveryFlags(fs *pflag.FlagSet, a *bootstrap.PilotArgs, lo *logOptions, tf *tlsFlags) {
	fs.StringVar(&a.ConfigDir, "configDir", a.ConfigDir, "Directory to watch for Istio and Gateway API configuration (replaces Kubernetes as the config source)")
	fs.StringVar(&a.MeshConfigFile, "meshConfig", a.MeshConfigFile, "File name for Istio mesh configuration; when it exists it wins over the ConfigMap")
	fs.StringVar(&a.NetworksConfigFile, "networksConfig", a.NetworksConfigFile, "File name for Istio mesh networks configuration")
	fs.StringVar(&a.KubeConfig, "kubeconfig", a.KubeConfig, "Kubeconfig file (in-cluster config when empty and running in a cluster)")
	fs.Float32Var(&a.KubernetesAPIQPS, "kubernetesApiQPS", a.KubernetesAPIQPS, "Maximum QPS to the Kubernetes API server")
	fs.IntVar(&a.KubernetesAPIBurst, "kubernetesApiBurst", a.KubernetesAPIBurst, "Maximum burst to the Kubernetes API server")
	fs.StringSliceVar(&a.Registries, "registries", a.Registries, "Service registries to read (Kubernetes)")
	fs.StringVar(&a.ClusterID, "clusterID", a.ClusterID, "ID of the cluster this istiod runs in")
	fs.StringToStringVar(&a.ClusterAliases, "clusterAliases", map[string]string{}, "Alias names for clusters. Example: alias1=cluster1,alias2=cluster2")
	fs.StringVar(&a.ClusterRegistriesNamespace, "clusterRegistriesNamespace", a.ClusterRegistriesNamespace,
		"Namespace for ConfigMap which stores clusters configs (POD_NAMESPACE)")
	fs.StringVarP(&a.Namespace, "namespace", "n", a.Namespace, "Namespace istiod runs in (POD_NAMESPACE)")
	fs.StringVar(&a.CniNamespace, "cniNamespace", a.CniNamespace, "Namespace istio-cni runs in (POD_NAMESPACE)")
	fs.StringVar(&a.Revision, "revision", a.Revision, "Control plane revision (REVISION)")
	fs.StringVar(&a.Domain, "domain", a.Domain, "DNS domain suffix")
	fs.StringVar(&a.HTTPAddr, "httpAddr", a.HTTPAddr, "Address of the HTTP server (readiness and debug)")
	fs.StringVar(&a.GRPCAddr, "grpcAddr", a.GRPCAddr, "Address of the plaintext xDS gRPC server")
	fs.StringVar(&a.SecureGRPCAddr, "secureGRPCAddr", a.SecureGRPCAddr, "Address of the TLS xDS gRPC server")
	fs.StringVar(&a.HTTPSAddr, "httpsAddr", a.HTTPSAddr, "Address of the webhook HTTPS server")
	fs.StringVar(&a.MonitoringAddr, "monitoringAddr", a.MonitoringAddr, "Address of the monitoring server (/metrics, /version, debug)")
	fs.StringVar(&a.TLS.CaCertFile, "caCertFile", a.TLS.CaCertFile, "File containing the x509 Server CA Certificate")
	fs.StringVar(&a.TLS.CertFile, "tlsCertFile", a.TLS.CertFile, "File containing the x509 Server Certificate")
	fs.StringVar(&a.TLS.KeyFile, "tlsKeyFile", a.TLS.KeyFile, "File containing the x509 private key matching --tlsCertFile")
	fs.StringSliceVar(&tf.cipherSuites, "tls-cipher-suites", nil, "Comma-separated list of cipher suites for istiod TLS server. "+
		"If omitted, the default Go cipher suites will be used. If 'tls-min-version' is set to '1.3', these cipher suites will be ignored.\n"+
		"Preferred values: "+strings.Join(security.SecureTLSCipherNames(), ", ")+". \n"+
		"Insecure values: "+strings.Join(security.InsecureTLSCipherNames(), ", ")+".")
	fs.StringVar(&tf.minVersion, "tls-min-version", security.TLSMinVersion12, "Minimum TLS version for the istiod TLS server. "+
		"Only "+security.TLSMinVersion12+" and "+security.TLSMinVersion13+" are supported.")
	fs.DurationVar(&a.Keepalive.Time, "keepaliveInterval", a.Keepalive.Time, "gRPC keepalive interval")
	fs.DurationVar(&a.Keepalive.Timeout, "keepaliveTimeout", a.Keepalive.Timeout, "gRPC keepalive timeout")
	fs.DurationVar(&a.Keepalive.MaxServerConnectionAge, "keepaliveMaxServerConnectionAge", a.Keepalive.MaxServerConnectionAge, "Maximum age of an xDS connection before it is closed")
	fs.DurationVar(&a.Keepalive.MaxServerConnectionAgeGrace, "keepaliveMaxServerConnectionAgeGrace", a.Keepalive.MaxServerConnectionAgeGrace, "Grace period after the maximum age")
	fs.BoolVar(&a.Profile, "profile", a.Profile, "Serve /debug/pprof")
	fs.DurationVar(&a.ShutdownDuration, "shutdownDuration", a.ShutdownDuration, "Time allowed for graceful shutdown")
	fs.DurationVar(&a.FileResync, "fileResync", a.FileResync, "How often --configDir is re-read even without file events")
	addLogFlags(fs, lo)
	// ControlZ is not served: the flags are accepted, and said to be ignored
	fs.Uint16Var(&tf.ctrlzPort, "ctrlz_port", 9876, "The IP port to use for the ControlZ introspection facility (not served: ignored)")
	fs.StringVar(&tf.ctrlzAddress, "ctrlz_address", "localhost", "The IP Address to listen on for the ControlZ introspection facility (not served: ignored)")
}

// tlsFlags are the discovery flags read into something other than
// PilotArgs' own fields.
type tlsFlags struct {
	cipherSuites []string
	minVersion   string
	ctrlzPort    uint16
	ctrlzAddress string
}

// ignoredFlags are flags pilot-discovery has that do nothing here: each
// one given says so once.
var ignoredFlags = map[string]string{
	"ctrlz_port":    "this istiod serves no ControlZ introspection",
	"ctrlz_address": "this istiod serves no ControlZ introspection",
}

// completeArgs parses and checks what pilot-discovery checks before it
// starts (its validateFlags): at most one alias per cluster, a known
// minimum TLS version and known cipher suites.
func completeArgs(a *bootstrap.PilotArgs, tf tlsFlags) error {
	seen := map[string]bool{}
	for _, alias := range slices.Sorted(maps.Keys(a.ClusterAliases)) {
		id := a.ClusterAliases[alias]
		if seen[id] {
			return errors.New("More than one cluster alias for cluster id: " + id)
		}
		seen[id] = true
	}
	v, err := security.TLSMinVersion(tf.minVersion)
	if err != nil {
		return err
	}
	a.TLS.MinVersion = v
	suites, err := security.TLSCipherSuites(tf.cipherSuites)
	if err != nil {
		return err
	}
	a.TLS.CipherSuites = suites
	return nil
}

// argsFromEnv applies the environment istiod reads at startup; flags given
// explicitly win over it.
func argsFromEnv(a *bootstrap.PilotArgs) error {
	if v := os.Getenv("POD_NAMESPACE"); v != "" {
		a.Namespace = v
		a.CniNamespace = v
		a.ClusterRegistriesNamespace = v
	}
	if v := os.Getenv("REVISION"); v != "" {
		a.Revision = v
	}
	if v := os.Getenv("CLUSTER_ID"); v != "" {
		a.ClusterID = v
	}
	a.PodName = os.Getenv("POD_NAME")
	a.SharedMeshConfig = os.Getenv("SHARED_MESH_CONFIG")
	a.InCluster = os.Getenv("KUBERNETES_SERVICE_HOST") != ""
	if err := debounceFromEnv(a); err != nil {
		return err
	}
	if err := injectionFromEnv(&a.Injection); err != nil {
		return err
	}
	if err := securityFromEnv(&a.Security); err != nil {
		return err
	}
	if err := bootstrap.MulticlusterFromEnv(os.Getenv, &a.Multicluster); err != nil {
		return err
	}
	if err := bootstrap.AutoRegistrationFromEnv(os.Getenv, &a.AutoRegistration); err != nil {
		return err
	}
	if err := bootstrap.IPAllocateFromEnv(os.Getenv, &a.IPAllocate); err != nil {
		return err
	}
	mongo, release := !a.NoMongoFilter, !a.KeepIdleMemory
	for _, e := range []struct {
		name string
		dst  *bool
	}{
		{"PILOT_ENABLE_GATEWAY_API", &a.EnableGatewayAPI},
		{"PILOT_ENABLE_AMBIENT", &a.EnableAmbient},
		{"PILOT_SCOPE_GATEWAY_TO_NAMESPACE", &a.ScopeGatewayToNamespace},
		{"PILOT_FILTER_GATEWAY_CLUSTER_CONFIG", &a.FilterGatewayClusters},
		{"ENABLE_TLS_ON_SIDECAR_INGRESS", &a.SidecarIngressTLS},
		{"ISTIO_DUAL_STACK", &a.DualStack},
		{"ISTIO_ENABLE_IPV4_OUTBOUND_LISTENER_FOR_IPV6_CLUSTERS", &a.IPv4OutboundForIPv6},
		{"PILOT_ENABLE_GATEWAY_API_DEPLOYMENT_CONTROLLER", &a.GatewayDeployment.Enabled},
		{"PILOT_ENABLE_GATEWAY_API_COPY_LABELS_ANNOTATIONS", &a.GatewayDeployment.CopyLabelsAnnotations},
		{"ENABLE_GATEWAY_API_MANUAL_DEPLOYMENT", &a.GatewayDeployment.ManualDeployment},
		{"PILOT_ENABLE_QUIC_LISTENERS", &a.GatewayDeployment.QUICListeners},
		{"PILOT_ENABLE_MONGO_FILTER", &mongo},
		{"PILOT_ENABLE_REDIS_FILTER", &a.RedisFilter},
		{"PILOT_ENABLE_MYSQL_FILTER", &a.MySQLFilter},
		{"ISTIOD_RELEASE_IDLE_MEMORY", &release},
	} {
		if v := os.Getenv(e.name); v != "" {
			b, err := strconv.ParseBool(v)
			if err != nil {
				return fmt.Errorf("%s=%q: %v", e.name, v, err)
			}
			*e.dst = b
		}
	}
	a.NoMongoFilter, a.KeepIdleMemory = !mongo, !release
	return nil
}

// securityFromEnv reads the CA settings.
func securityFromEnv(o *bootstrap.SecurityOptions) error {
	if v := os.Getenv("ISTIOD_CA_DIR"); v != "" {
		o.CADir = v
	}
	o.StateDir = bootstrap.UserStateDir(os.Getenv, os.UserCacheDir)
	if v := os.Getenv("ROOT_CA_DIR"); v != "" {
		o.PluggedCertDir = v
	}
	o.TrustedNodeAccounts = os.Getenv("CA_TRUSTED_NODE_ACCOUNTS")
	for _, d := range []struct {
		env string
		dst *time.Duration
	}{{"DEFAULT_WORKLOAD_CERT_TTL", &o.DefaultCertTTL}, {"MAX_WORKLOAD_CERT_TTL", &o.MaxCertTTL}} {
		if v := os.Getenv(d.env); v != "" {
			dur, err := time.ParseDuration(v)
			if err != nil || dur <= 0 {
				return fmt.Errorf("%s=%q: want a positive duration", d.env, v)
			}
			*d.dst = dur
		}
	}
	if v := os.Getenv("ISTIOD_CUSTOM_HOST"); v != "" {
		o.CustomHosts = splitList(v)
	}
	if v := os.Getenv("TOKEN_AUDIENCES"); v != "" {
		o.TokenAudiences = splitList(v)
	}
	if v := os.Getenv("ENABLE_DEBUG_ENDPOINT_AUTH"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return fmt.Errorf("ENABLE_DEBUG_ENDPOINT_AUTH=%q: %v", v, err)
		}
		o.NoDebugAuth = !b
	}
	if v := os.Getenv("ENABLE_LEADER_ELECTION"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return fmt.Errorf("ENABLE_LEADER_ELECTION=%q: %v", v, err)
		}
		// false: every leader-elected controller runs as if it led
		o.LeaderElection.Disabled = !b
	}
	return nil
}

func splitList(v string) []string {
	var out []string
	for _, p := range strings.Split(v, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// debounceFromEnv reads the push debounce settings.
func debounceFromEnv(a *bootstrap.PilotArgs) error {
	for _, d := range []struct {
		env string
		dst *time.Duration
	}{{"PILOT_DEBOUNCE_AFTER", &a.Debounce.After}, {"PILOT_DEBOUNCE_MAX", &a.Debounce.Max}} {
		if v := os.Getenv(d.env); v != "" {
			dur, err := time.ParseDuration(v)
			if err != nil {
				return fmt.Errorf("%s=%q: %v", d.env, v, err)
			}
			*d.dst = dur
		}
	}
	if v := os.Getenv("PILOT_PUSH_THROTTLE"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return fmt.Errorf("PILOT_PUSH_THROTTLE=%q: want a non-negative integer", v)
		}
		a.PushThrottle = n
	}
	if v := os.Getenv("PILOT_XDS_SEND_TIMEOUT"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			return fmt.Errorf("PILOT_XDS_SEND_TIMEOUT=%q: want a non-negative duration", v)
		}
		a.SendTimeout = d
	}
	if v := os.Getenv("PILOT_MAX_REQUESTS_PER_SECOND"); v != "" {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return fmt.Errorf("PILOT_MAX_REQUESTS_PER_SECOND=%q: %v", v, err)
		}
		if f > 0 {
			a.RequestLimit = f // 0 or less: automatic, as in Istio
		}
	}
	if v := os.Getenv("PILOT_ENABLE_EDS_DEBOUNCE"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return fmt.Errorf("PILOT_ENABLE_EDS_DEBOUNCE=%q: %v", v, err)
		}
		a.Debounce.EnableEDSDebounce = b
	}
	return nil
}

func newDiscoveryCommand(run func(bootstrap.PilotArgs) error) *cobra.Command {
	args := bootstrap.DefaultArgs()
	lo := defaultLogOptions()
	var tf tlsFlags
	cmd := &cobra.Command{
		Use:   "discovery",
		Short: "Run the control plane",
		Args:  cobra.ArbitraryArgs,
		FParseErrWhitelist: cobra.FParseErrWhitelist{
			UnknownFlags: true, // pilot-discovery flags we do not know must not stop a Deployment
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			// explicit flags win over the environment
			explicit := map[string]bool{}
			cmd.Flags().Visit(func(f *pflag.Flag) { explicit[f.Name] = true })
			saved := args
			if err := argsFromEnv(&args); err != nil {
				return runError{err}
			}
			for _, f := range []struct {
				name       string
				dst, saved *string
			}{
				{"namespace", &args.Namespace, &saved.Namespace},
				{"revision", &args.Revision, &saved.Revision},
				{"clusterID", &args.ClusterID, &saved.ClusterID},
				{"cniNamespace", &args.CniNamespace, &saved.CniNamespace},
				{"clusterRegistriesNamespace", &args.ClusterRegistriesNamespace, &saved.ClusterRegistriesNamespace},
			} {
				if explicit[f.name] {
					*f.dst = *f.saved
				}
			}
			if err := completeArgs(&args, tf); err != nil {
				return err
			}
			if err := lo.configure(cmd.OutOrStdout(), cmd.ErrOrStderr()); err != nil {
				return err
			}
			// pilot-discovery logs its flags first (its pkg/cmd PrintFlags)
			cmd.Flags().VisitAll(func(f *pflag.Flag) { log.Infof("FLAG: --%s=%q", f.Name, f.Value) })
			for _, name := range slices.Sorted(maps.Keys(ignoredFlags)) {
				if explicit[name] {
					log.Warnf("--%s is ignored: %s", name, ignoredFlags[name])
				}
			}
			if err := run(args); err != nil {
				return runError{err}
			}
			return nil
		},
	}
	addDiscoveryFlags(cmd.Flags(), &args, &lo, &tf)
	return cmd
}

func runDiscovery(args bootstrap.PilotArgs) error {
	log.Infof("starting istiod %s (Istio %s compatible)", version.Get().Version, version.IstioCompat)
	_, msg := memlimit.Apply("/sys/fs/cgroup")
	log.Infof("%s", msg)
	s, err := bootstrap.NewServer(args)
	if err != nil {
		return err
	}
	if err := s.Start(); err != nil {
		return err
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	got := <-sig
	log.Infof("received %v, shutting down", got)
	s.Shutdown()
	log.Infof("shutdown complete")
	return nil
}

// injectionFromEnv reads the injector's settings: INJECT_ENABLED (default
// true), ENABLE_NATIVE_SIDECARS (true, false or auto) and COMPLIANCE_POLICY.
func injectionFromEnv(o *bootstrap.InjectionOptions) error {
	if v := os.Getenv("INJECT_ENABLED"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return fmt.Errorf("INJECT_ENABLED=%q: %v", v, err)
		}
		o.Disabled = !b
	}
	o.NativeSidecars = inject.ParseNativeSidecarMode(os.Getenv("ENABLE_NATIVE_SIDECARS"))
	o.CompliancePolicy = os.Getenv("COMPLIANCE_POLICY")
	return nil
}
