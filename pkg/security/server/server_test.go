package server_test

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"net"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"
	pb "istio.io/api/security/v1alpha1"
	authenticationv1 "k8s.io/api/authentication/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/meshplane/istiod/pkg/clock"
	"github.com/meshplane/istiod/pkg/log/logtest"
	"github.com/meshplane/istiod/pkg/monitoring"
	"github.com/meshplane/istiod/pkg/security"
	"github.com/meshplane/istiod/pkg/security/authenticate"
	"github.com/meshplane/istiod/pkg/security/ca"
	"github.com/meshplane/istiod/pkg/security/server"
)

const (
	productpage = "spiffe://cluster.local/ns/bookinfo/sa/bookinfo-productpage"
	intruder    = "spiffe://cluster.local/ns/elsewhere/sa/intruder"
)

// fakeAPIServer answers TokenReviews: token "pp" is bookinfo/bookinfo-productpage,
// "intruder" is elsewhere/intruder, both with audience istio-ca; "kube-aud"
// has only the default Kubernetes audience.
func fakeAPIServer() *fake.Clientset {
	users := map[string]string{"pp": "system:serviceaccount:bookinfo:bookinfo-productpage", "intruder": "system:serviceaccount:elsewhere:intruder"}
	c := fake.NewClientset()
	c.PrependReactor("create", "tokenreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		tr := a.(k8stesting.CreateAction).GetObject().(*authenticationv1.TokenReview).DeepCopy()
		u, ok := users[tr.Spec.Token]
		switch {
		case ok && slices.Contains(tr.Spec.Audiences, "istio-ca"):
			tr.Status = authenticationv1.TokenReviewStatus{Authenticated: true, Audiences: []string{"istio-ca"},
				User: authenticationv1.UserInfo{Username: u, Groups: []string{"system:serviceaccounts"}}}
		case tr.Spec.Token == "kube-aud":
			tr.Status.Error = `[invalid bearer token, token audiences ["https://kubernetes.default.svc"] is invalid for the target audiences ["istio-ca"]]`
		default:
			tr.Status.Error = "[invalid bearer token]"
		}
		return true, tr, nil
	})
	return c
}

type fixture struct {
	ca     *ca.CA
	clock  *clock.Fake
	addr   string
	plain  string
	logs   *logtest.Buffer
	client pb.IstioCertificateServiceClient
}

func start(t *testing.T) *fixture {
	t.Helper()
	logs := logtest.Capture(t)
	fc := clock.NewFake(time.Now().Truncate(time.Second))
	c, err := ca.New(context.Background(), ca.Options{KeyType: ca.KeyECDSAP256, Clock: fc})
	if err != nil {
		t.Fatal(err)
	}
	dns, ips := ca.SplitHosts(ca.ServingCertSANs("istio-system", "", "", nil))
	holder, err := ca.NewServingCertHolder(c, dns, ips)
	if err != nil {
		t.Fatal(err)
	}
	srv := server.New(server.Options{
		CA: c,
		Authenticators: []security.Authenticator{
			authenticate.NewClientCertAuthenticator(),
			authenticate.NewKubeJWTAuthenticator(authenticate.KubeJWTOptions{Client: fakeAPIServer()}),
		},
		Clock: fc,
	})
	serve := func(opts ...grpc.ServerOption) string {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		g := grpc.NewServer(opts...)
		srv.Register(g)
		go func() { _ = g.Serve(l) }()
		t.Cleanup(g.Stop)
		return l.Addr().String()
	}
	f := &fixture{ca: c, clock: fc, logs: logs}
	f.addr = serve(grpc.Creds(credentials.NewTLS(ca.ServerTLSConfig(c, holder))))
	f.plain = serve()
	f.client = f.dial(t, nil)
	return f
}

// dial connects over TLS, verifying istiod.istio-system.svc as the agent
// does (ISTIOD_SAN), optionally presenting a client certificate.
func (f *fixture) dial(t *testing.T, cert *tls.Certificate) pb.IstioCertificateServiceClient {
	t.Helper()
	cfg := &tls.Config{RootCAs: f.ca.RootCertPool(), ServerName: "istiod.istio-system.svc"}
	if cert != nil {
		cfg.Certificates = []tls.Certificate{*cert}
	}
	conn, err := grpc.NewClient(f.addr, grpc.WithTransportCredentials(credentials.NewTLS(cfg)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return pb.NewIstioCertificateServiceClient(conn)
}

func newCSR(t *testing.T, uris ...string) (*ecdsa.PrivateKey, string) {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.CertificateRequest{Subject: pkix.Name{}}
	for _, u := range uris {
		pu, _ := url.Parse(u)
		tmpl.URIs = append(tmpl.URIs, pu)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, tmpl, key)
	if err != nil {
		t.Fatal(err)
	}
	return key, string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}))
}

func call(ctx context.Context, c pb.IstioCertificateServiceClient, csr string, ttlSeconds int64, md ...string) (*pb.IstioCertificateResponse, error) {
	if len(md) > 0 {
		ctx = metadata.AppendToOutgoingContext(ctx, md...)
	}
	return c.CreateCertificate(ctx, &pb.IstioCertificateRequest{Csr: csr, ValidityDuration: ttlSeconds})
}

func leafOf(t *testing.T, resp *pb.IstioCertificateResponse) *x509.Certificate {
	t.Helper()
	b, _ := pem.Decode([]byte(resp.CertChain[0]))
	c, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func wantStatus(t *testing.T, err error, code codes.Code, msg string) {
	t.Helper()
	st, _ := status.FromError(err)
	if st.Code() != code || st.Message() != msg {
		t.Fatalf("status %v %q, want %v %q", st.Code(), st.Message(), code, msg)
	}
}

// scrape returns the registry's exposition text and the value of each series.
func scrape(t *testing.T) (string, map[string]float64) {
	t.Helper()
	rec := httptest.NewRecorder()
	monitoring.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	text := rec.Body.String()
	values := map[string]float64{}
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "citadel_") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatal(err)
		}
		values[line[:i]] = v
	}
	return text, values
}

func TestCreateCertificate(t *testing.T) {
	f := start(t)
	ctx := t.Context()
	_, before := scrape(t)
	// grpc-status.txt, CreateCertificate rows
	_, csr := newCSR(t)

	_, err := call(ctx, f.client, csr, 3600)
	wantStatus(t, err, codes.Unauthenticated, "request authenticate failure")
	if lines := f.logs.Lines("ERROR", "\tsecurity\t", "Failed to authenticate client from 127.0.0.1:",
		"Authenticator ClientCertAuthenticator: no verified chain is found; Authenticator KubeJWTAuthenticator: target JWT extraction error: no HTTP authorization header exists"); len(lines) != 1 {
		t.Fatalf("refusal log:\n%s", f.logs)
	}

	_, err = call(ctx, f.client, csr, 3600, "authorization", "Bearer kube-aud")
	wantStatus(t, err, codes.Unauthenticated, "request authenticate failure")
	if lines := f.logs.Lines("ERROR", "\tsecurity\t", `Authenticator KubeJWTAuthenticator: failed to validate the JWT from cluster "": the service account authentication returns an error: [invalid bearer token, token audiences ["https://kubernetes.default.svc"] is invalid for the target audiences ["istio-ca"]]`); len(lines) != 1 {
		t.Fatalf("wrong-audience log:\n%s", f.logs)
	}

	_, err = call(ctx, f.client, csr, 3600, "authorization", "Bearer pp", "ClusterID", "other-cluster")
	wantStatus(t, err, codes.Unauthenticated, "request authenticate failure")
	if lines := f.logs.Lines("ERROR", `client claims to be in cluster "other-cluster", but we only know about local cluster "Kubernetes" and remote clusters []`); len(lines) != 1 {
		t.Fatalf("foreign cluster log:\n%s", f.logs)
	}

	var kept *pb.IstioCertificateResponse
	var keptKey *ecdsa.PrivateKey
	for _, tc := range []struct {
		name  string
		ttl   int64
		md    []string
		csr   []string // the CSR's own URI SANs
		id    string
		valid time.Duration
	}{
		{"ClusterID Kubernetes", 3600, []string{"authorization", "Bearer pp", "ClusterID", "Kubernetes"}, nil, productpage, time.Hour + 2*time.Minute},
		{"no ClusterID", 3600, []string{"authorization", "Bearer pp"}, nil, productpage, time.Hour + 2*time.Minute},
		{"intruder naming productpage in its CSR", 3600, []string{"authorization", "Bearer intruder"}, []string{productpage}, intruder, time.Hour + 2*time.Minute},
		{"48h", 48 * 3600, []string{"authorization", "Bearer pp"}, nil, productpage, 48*time.Hour + 2*time.Minute},
		{"no TTL is the default", 0, []string{"authorization", "Bearer pp"}, nil, productpage, 24*time.Hour + 2*time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key, csr := newCSR(t, tc.csr...)
			resp, err := call(ctx, f.client, csr, tc.ttl, tc.md...)
			if err != nil {
				t.Fatal(err)
			}
			if len(resp.CertChain) != 2 || resp.CertChain[1] != string(f.ca.RootCertPEM()) {
				t.Fatalf("chain of %d, root last: %v", len(resp.CertChain), resp.CertChain[len(resp.CertChain)-1] == string(f.ca.RootCertPEM()))
			}
			leaf := leafOf(t, resp)
			if len(leaf.URIs) != 1 || leaf.URIs[0].String() != tc.id || leaf.Issuer.String() != "O=cluster.local" {
				t.Fatalf("URIs %v issuer %q", leaf.URIs, leaf.Issuer)
			}
			if got := leaf.NotAfter.Sub(leaf.NotBefore); got != tc.valid {
				t.Fatalf("valid %v, want %v", got, tc.valid)
			}
			if tc.name == "ClusterID Kubernetes" {
				kept, keptKey = resp, key
			}
		})
	}

	// mTLS: the workload certificate authenticates without a token
	mtls := f.dial(t, &tls.Certificate{Certificate: [][]byte{leafOf(t, kept).Raw}, PrivateKey: keptKey})
	resp, err := call(ctx, mtls, csr, 3600)
	if err != nil {
		t.Fatalf("mTLS: %v", err)
	}
	if l := leafOf(t, resp); l.URIs[0].String() != productpage {
		t.Fatalf("mTLS identity %v", l.URIs)
	}

	// refusals by the CA
	_, err = call(ctx, f.client, csr, 90*24*3600+1, "authorization", "Bearer pp")
	wantStatus(t, err, codes.InvalidArgument, "CSR signing error (requested TTL 2160h0m1s is greater than the max allowed TTL 2160h0m0s)")
	_, err = call(ctx, f.client, "garbage", 3600, "authorization", "Bearer pp")
	wantStatus(t, err, codes.InvalidArgument, "CSR signing error (certificate signing request is not properly encoded)")
	_, err = call(ctx, f.client, csr, 1<<62, "authorization", "Bearer pp") // would overflow a Duration
	wantStatus(t, err, codes.InvalidArgument, "CSR signing error (requested TTL 2562047h47m16.854775807s is greater than the max allowed TTL 2160h0m0s)")
	if lines := f.logs.Lines("ERROR", "\tserverca\t", "CSR signing error: requested TTL 2160h0m1s", "client=127.0.0.1:"); len(lines) != 1 {
		t.Fatalf("sign refusal log:\n%s", f.logs)
	}

	// impersonation is not supported
	_, err = f.client.CreateCertificate(metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer pp"), &pb.IstioCertificateRequest{
		Csr: csr, Metadata: &structpb.Struct{Fields: map[string]*structpb.Value{"ImpersonatedIdentity": structpb.NewStringValue(intruder)}},
	})
	wantStatus(t, err, codes.Unauthenticated, "request impersonation authentication failure")

	// metrics (metrics-citadel.txt): every call counts as a CSR, refusals included
	text, after := scrape(t)
	delta := func(k string) float64 { return after[k] - before[k] }
	for k, want := range map[string]float64{
		"citadel_server_csr_count":                             13,
		"citadel_server_success_cert_issuance_count":           6,
		"citadel_server_authentication_failure_count":          4,
		`citadel_server_csr_sign_err_count{error="TTL_ERROR"}`: 2,
		`citadel_server_csr_sign_err_count{error="CSR_ERROR"}`: 1,
	} {
		if got := delta(k); got != want {
			t.Errorf("%s grew by %v, want %v", k, got, want)
		}
	}
	root := f.ca.RootCerts()[0]
	if got := after["citadel_server_root_cert_expiry_timestamp"]; got != float64(root.NotAfter.Unix()) {
		t.Errorf("root expiry timestamp %v, want %v", got, root.NotAfter.Unix())
	}
	if got := after["citadel_server_root_cert_expiry_seconds"]; got != root.NotAfter.Sub(f.clock.Now()).Seconds() {
		t.Errorf("root expiry seconds %v", got)
	}
	for _, want := range []string{
		"# HELP citadel_server_authentication_failure_count The number of authentication failures.\n# TYPE citadel_server_authentication_failure_count counter\n",
		"# HELP citadel_server_csr_count The number of CSRs received by Citadel server.\n# TYPE citadel_server_csr_count counter\n",
		"# HELP citadel_server_root_cert_expiry_seconds The time remaining, in seconds, before the root cert will expire. A negative value indicates the cert is expired.\n# TYPE citadel_server_root_cert_expiry_seconds gauge\n",
		"# HELP citadel_server_root_cert_expiry_timestamp The unix timestamp, in seconds, when the root cert will expire.\n# TYPE citadel_server_root_cert_expiry_timestamp gauge\n",
		"# HELP citadel_server_success_cert_issuance_count The number of certificates issuances that have succeeded.\n# TYPE citadel_server_success_cert_issuance_count counter\n",
		"# HELP citadel_server_csr_sign_err_count The number of errors occurred when signing the CSR.\n# TYPE citadel_server_csr_sign_err_count counter\n",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("exposition lacks %q", want)
		}
	}
	// never incremented, so never exposed (as in Istio); no self-signed cert chain either
	for _, absent := range []string{"citadel_server_csr_parsing_err_count", "citadel_server_id_extraction_err_count", "citadel_server_cert_chain_expiry", "citadel_server_csr_count_total"} {
		if strings.Contains(text, absent) {
			t.Errorf("exposition has %s", absent)
		}
	}
	// the gauge follows the clock
	f.clock.Advance(time.Hour)
	if _, later := scrape(t); later["citadel_server_root_cert_expiry_seconds"] != after["citadel_server_root_cert_expiry_seconds"]-3600 {
		t.Errorf("expiry seconds did not follow the clock: %v", later["citadel_server_root_cert_expiry_seconds"])
	}
}

func TestPlaintextIsRefused(t *testing.T) {
	f := start(t)
	conn, err := grpc.NewClient(f.plain, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_, csr := newCSR(t)
	_, err = call(t.Context(), pb.NewIstioCertificateServiceClient(conn), csr, 3600, "authorization", "Bearer pp")
	wantStatus(t, err, codes.Unauthenticated, "request authenticate failure")
	if len(f.logs.Lines("ERROR", "the connection is not TLS")) != 1 {
		t.Fatalf("log:\n%s", f.logs)
	}
}

func TestServingCertOnTheWire(t *testing.T) {
	f := start(t)
	// the client verifies istiod.istio-system.svc; 127.0.0.1 fails (grpc-status.txt)
	conn, err := tls.Dial("tcp", f.addr, &tls.Config{RootCAs: f.ca.RootCertPool(), ServerName: "istiod.istio-system.svc", NextProtos: []string{"h2"}})
	if err != nil {
		t.Fatal(err)
	}
	st := conn.ConnectionState()
	conn.Close()
	if len(st.PeerCertificates) != 1 {
		t.Fatalf("server presented %d certificates, want the leaf alone", len(st.PeerCertificates))
	}
	if !slices.Equal(st.PeerCertificates[0].DNSNames, []string{"istio-pilot.istio-system.svc", "istiod-remote.istio-system.svc", "istiod.istio-system.svc"}) {
		t.Fatalf("SANs %v", st.PeerCertificates[0].DNSNames)
	}
	_, err = tls.Dial("tcp", f.addr, &tls.Config{RootCAs: f.ca.RootCertPool(), ServerName: "127.0.0.1"})
	if err == nil || !strings.Contains(err.Error(), "doesn't contain any IP SANs") {
		t.Fatalf("dial 127.0.0.1: %v", err)
	}
}
