package bootstrap

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"

	xdsdebug "github.com/meshplane/istiod/pilot/pkg/xds/debug"
	"github.com/meshplane/istiod/pkg/config/schema/gvr"
	"github.com/meshplane/istiod/pkg/kube/leaderelection"
	"github.com/meshplane/istiod/pkg/kube/namespacecontroller"
	"github.com/meshplane/istiod/pkg/security"
	"github.com/meshplane/istiod/pkg/security/authenticate"
	"github.com/meshplane/istiod/pkg/security/ca"
	caserver "github.com/meshplane/istiod/pkg/security/server"
	"github.com/meshplane/istiod/pkg/version"
	"github.com/meshplane/istiod/pkg/webhooks/patcher"
)

// secure is the CA and the TLS port: the certificate service and ADS over
// TLS (--secureGRPCAddr), the root published to every namespace, the
// serving certificate of the TLS port and of the webhooks (--httpsAddr).
type secure struct {
	ca *ca.CA
	// serving is istiod's certificate from its CA; nil when files is set
	serving *ca.ServingCertHolder
	// files is the serving certificate of --tlsCertFile, --tlsKeyFile and
	// --caCertFile (tlsfiles.go), nil without them
	files    *fileCert
	grpc     *grpc.Server
	listener net.Listener
	auths    []security.Authenticator
	nsc      *namespacecontroller.Controller
	// election is Istio's prioritized ConfigMap lock of the namespace
	// controller (istio-namespace-controller-election), so that our
	// replicas and Istio's, side by side during a migration, elect one
	// writer (its default revision: Server.defaultRevisions)
	election *leaderelection.Prioritized
}

// initSecurity builds the CA (plugged-in files, else the istio-ca-secret
// Secret in a cluster, else a directory), istiod's serving certificate, the
// authenticators (client certificate, then Kubernetes token) and the TLS
// gRPC server that serves the CA and ADS. They serve both TLS listeners:
// --secureGRPCAddr and the webhooks' --httpsAddr, each of which may be
// off on its own, as in pilot-discovery; only when both are empty is none
// of it built.
func (s *Server) initSecurity() error {
	if s.args.SecureGRPCAddr == "" && s.args.HTTPSAddr == "" {
		return nil
	}
	opts := s.args.Security
	store, where, err := s.caStore()
	if err != nil {
		return err
	}
	trustDomain := s.mesh.Mesh().GetTrustDomain()
	var authority *ca.CA
	err = retry(s.internalStop, time.Minute, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		var err error
		authority, err = ca.New(ctx, ca.Options{TrustDomain: trustDomain, DefaultCertTTL: opts.DefaultCertTTL,
			MaxCertTTL: opts.MaxCertTTL, PluggedCertDir: opts.PluggedCertDir, Store: store})
		if dirErr := (*ca.DirError)(nil); errors.As(err, &dirErr) {
			return permanent{caDirUnusable(err)}
		}
		return err
	})
	if err != nil {
		return err
	}
	if where != "" && authority.SelfSigned() {
		scope.Infof("CA root kept in %s", where)
	}
	sans := ca.ServingCertSANs(s.args.Namespace, s.args.Revision, "", opts.CustomHosts)
	scope.Infof("Discover server subject alt names: %v", sans)
	sec := &secure{ca: authority, auths: []security.Authenticator{authenticate.NewClientCertAuthenticator()}}
	if cert, key, caFile, ok := customTLSFiles(s.args.TLS); ok {
		// a serving certificate from files (cert-manager, istio-csr)
		// replaces one of istiod's own CA, as in Istio
		scope.Infof("serving the TLS certificate of %s, %s and %s", cert, key, caFile)
		sec.files = newFileCert(cert, key, caFile)
	} else {
		dnsNames, ips := ca.SplitHosts(sans)
		holder, err := ca.NewServingCertHolder(authority, dnsNames, ips)
		if err != nil {
			return fmt.Errorf("istiod serving certificate: %v", err)
		}
		sec.serving = holder
	}
	if s.kubeClient != nil {
		sec.auths = append(sec.auths, authenticate.NewKubeJWTAuthenticator(authenticate.KubeJWTOptions{
			Client: s.kubeClient.Kube(), TrustDomainFunc: func() string { return s.mesh.Mesh().GetTrustDomain() },
			Audiences: opts.TokenAudiences, ClusterID: s.args.ClusterID}))
	}
	sec.grpc = newGRPCServer(s.discovery.server, s.args.Keepalive, grpc.Creds(credentials.NewTLS(sec.serverTLSConfig(s.args.TLS))))
	caserver.New(caserver.Options{CA: authority, Authenticators: sec.auths, NodeAuthorizer: s.nodeAuthorizer(opts)}).Register(sec.grpc)
	d := s.discovery.server
	d.Register(sec.grpc)
	d.SetAuthenticator(func(ctx context.Context) ([]string, error) {
		c, err := security.Authenticate(ctx, sec.auths)
		if err != nil {
			return nil, err
		}
		return c.Identities, nil
	})
	(&xdsdebug.XDSGenerators{Server: d, SystemNamespace: s.args.Namespace}).Register()
	if s.kubeClient != nil {
		s.initRootCertPublisher(sec)
	}
	s.secure = sec
	return nil
}

// initRootCertPublisher writes istio-ca-root-cert (and istio-ca-crl) into
// every served namespace, and the root into the caBundle of this
// revision's webhook configurations, while this replica leads Istio's
// namespace controller Lease, and again whenever the root changes.
func (s *Server) initRootCertPublisher(sec *secure) {
	var filter func(string) bool
	if s.nsFilter != nil {
		filter = s.nsFilter.Filter
	}
	sec.nsc = namespacecontroller.New(s.kubeClient.Kube(), namespacecontroller.Options{Filter: filter, Root: sec.publishedRoot()})
	if s.nsFilter != nil {
		s.nsFilter.AddHandler(sec.nsc.ResyncAll)
	}
	// the webhook configurations of this revision trust the same root
	wh := patcher.New(s.kubeClient.Kube(), patcher.Options{Revision: s.args.Revision, CABundle: sec.publishedRoot(),
		ReadyForFailClose: patcher.DryRunInvalidGateway(s.kubeClient.Istio(), s.args.Namespace, s.args.Revision)})
	republish := func() {
		sec.nsc.SetRoot(sec.publishedRoot())
		wh.SetCABundle(sec.publishedRoot())
	}
	// with a serving certificate from files, the files' CA bundle is the
	// published root (Istio's namespace controller and webhook patchers
	// read it from the same bundle); the CA's own root until it is read
	sec.ca.OnRootChange(republish)
	if sec.files != nil {
		sec.files.onCAChange(republish)
	}
	id := s.identity()
	sec.election = leaderelection.NewPrioritized(s.kubeClient.Kube(), leaderelection.PrioritizedOptions{
		Namespace: s.args.Namespace, Name: leaderelection.NamespaceController, Identity: id, Revision: s.args.Revision,
		DefaultRevision: s.defaultRevisions().Get, Timing: s.args.Security.LeaderElection})
	sec.election.AddRunFunction(sec.nsc.Run)
	sec.election.AddRunFunction(wh.Run)
}

// startSecurity binds --secureGRPCAddr (unless empty: the TLS gRPC server
// is then never served) and starts the root rotation and the leader
// election.
func (s *Server) startSecurity() error {
	sec := s.secure
	if sec == nil {
		return nil
	}
	if s.args.SecureGRPCAddr != "" {
		l, err := s.serveGRPC(sec.grpc, s.args.SecureGRPCAddr)
		if err != nil {
			return fmt.Errorf("--secureGRPCAddr: %v", err)
		}
		sec.listener = l
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		sec.ca.Run(s.internalStop)
	}()
	if sec.files != nil {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			sec.files.run(s.internalStop)
		}()
	}
	if sec.election != nil {
		s.startDefaultRevisions()
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			sec.election.Run(s.internalStop)
		}()
	}
	return nil
}

// SecureGRPCAddr is the bound TLS xDS and CA address ("" when disabled).
func (s *Server) SecureGRPCAddr() string {
	if s.secure == nil || s.secure.listener == nil {
		return ""
	}
	return s.secure.listener.Addr().String()
}

// IsNamespaceControllerLeader reports whether this replica writes the root
// ConfigMaps now.
func (s *Server) IsNamespaceControllerLeader() bool {
	return s.secure != nil && s.secure.election != nil && s.secure.election.IsLeader()
}

// CA returns the certificate authority (nil when both TLS listeners,
// --secureGRPCAddr and --httpsAddr, are off).
func (s *Server) CA() *ca.CA {
	if s.secure == nil {
		return nil
	}
	return s.secure.ca
}

// controlPlaneID is the identifier every xDS response carries, in Istio's
// JSON shape.
func controlPlaneID(podName string) string {
	v := version.Get()
	b, _ := json.Marshal(map[string]any{"Component": "istiod", "ID": podName, "Info": map[string]string{
		"version": v.Version, "revision": v.GitRevision, "golang_version": v.GoVersion, "status": v.BuildStatus, "tag": v.Version}})
	return string(b)
}

// permanent is an error f gives retry when trying again cannot help.
type permanent struct{ err error }

func (p permanent) Error() string { return p.err.Error() }

// retry calls f until it succeeds, fails permanently, stop closes or max
// has passed (the API server may not answer yet when istiod starts).
func retry(stop <-chan struct{}, max time.Duration, f func() error) error {
	deadline := time.Now().Add(max)
	wait := 100 * time.Millisecond
	for {
		err := f()
		if err == nil {
			return nil
		}
		if p, ok := err.(permanent); ok {
			return p.err
		}
		if time.Now().After(deadline) {
			return err
		}
		scope.Warnf("%v (retrying in %v)", err, wait)
		select {
		case <-stop:
			return err
		case <-time.After(wait):
		}
		wait = min(2*wait, 5*time.Second)
	}
}

// httpAuthenticate identifies a debug caller by its bearer token (the same
// authenticators as xDS, from the request's Authorization header) and
// returns its identity's namespace.
func (sec *secure) httpAuthenticate(r *http.Request) (string, error) {
	ctx := metadata.NewIncomingContext(r.Context(), metadata.Pairs("authorization", r.Header.Get("Authorization")))
	ctx = peer.NewContext(ctx, &peer.Peer{Addr: remoteAddr(r.RemoteAddr)})
	c, err := security.Authenticate(ctx, sec.auths)
	if err != nil {
		return "", err
	}
	for _, id := range c.Identities {
		if _, ns, _, err := security.ParseSpiffeID(id); err == nil {
			return ns, nil
		}
	}
	return "", fmt.Errorf("no SPIFFE identity in %v", c.Identities)
}

type remoteAddr string

func (a remoteAddr) Network() string { return "tcp" }
func (a remoteAddr) String() string  { return string(a) }

// nodeAuthorizer lets the trusted node accounts (ztunnel) have
// certificates issued for the workloads of their node, as Istio's CA does
// with CA_TRUSTED_NODE_ACCOUNTS, against the pods of the cluster istiod
// runs in; nil (impersonation refused) without accounts or a cluster.
func (s *Server) nodeAuthorizer(opts SecurityOptions) caserver.NodeAuthorizer {
	trusted, ignored := caserver.ParseTrustedNodeAccounts(opts.TrustedNodeAccounts)
	for _, e := range ignored {
		scope.Warnf("CA_TRUSTED_NODE_ACCOUNTS: ignoring %q: want <namespace>/<service account>", e)
	}
	if len(trusted) == 0 || s.kubeClient == nil {
		return nil
	}
	inf, err := s.kubeClient.Informer(gvr.Pod)
	if err == nil {
		err = inf.AddIndexers(caserver.PodIndexers())
	}
	if err != nil {
		scope.Errorf("CA_TRUSTED_NODE_ACCOUNTS: the pod index: %v; impersonation is refused", err)
		return nil
	}
	return caserver.NewPodNodeAuthorizer(trusted, inf.GetIndexer())
}
