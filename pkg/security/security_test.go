package security_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"

	"google.golang.org/grpc/peer"

	"github.com/meshplane/istiod/pkg/log/logtest"
	"github.com/meshplane/istiod/pkg/security"
)

func TestSpiffeIDRoundTrip(t *testing.T) {
	id := security.SpiffeID("cluster.local", "bookinfo", "bookinfo-productpage")
	if id != "spiffe://cluster.local/ns/bookinfo/sa/bookinfo-productpage" {
		t.Fatalf("SpiffeID = %q", id)
	}
	td, ns, sa, err := security.ParseSpiffeID(id)
	if err != nil || td != "cluster.local" || ns != "bookinfo" || sa != "bookinfo-productpage" {
		t.Fatalf("ParseSpiffeID = %q %q %q %v", td, ns, sa, err)
	}
}

func TestParseSpiffeIDRejects(t *testing.T) {
	for _, in := range []string{
		"",
		"http://cluster.local/ns/a/sa/b",
		"spiffe://cluster.local/ns/a",
		"spiffe://cluster.local/ns/a/sa/b/c",
		"spiffe://cluster.local/namespace/a/sa/b",
		"spiffe:///ns/a/sa/b",
		"spiffe://td/ns//sa/b",
		"spiffe://td/ns/a/sa/",
	} {
		if _, _, _, err := security.ParseSpiffeID(in); err == nil {
			t.Errorf("ParseSpiffeID(%q) accepted", in)
		} else if !strings.Contains(err.Error(), in) {
			t.Errorf("error %q does not quote the input %q", err, in)
		}
	}
}

func TestAuthSourceString(t *testing.T) {
	if security.AuthSourceClientCertificate.String() != "ClientCertificate" || security.AuthSourceKubeJWT.String() != "KubeJWT" {
		t.Fatal("AuthSource names")
	}
	if security.AuthSource(7).String() != "AuthSource(7)" {
		t.Fatal("unknown AuthSource name")
	}
}

type fakeAuth struct {
	typ    string
	caller *security.Caller
	err    error
	calls  int
}

func (f *fakeAuth) Authenticate(context.Context) (*security.Caller, error) {
	f.calls++
	return f.caller, f.err
}
func (f *fakeAuth) AuthenticatorType() string { return f.typ }

func peerCtx() context.Context {
	return peer.NewContext(context.Background(), &peer.Peer{Addr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 45518}})
}

func TestAuthenticateFirstSuccessWins(t *testing.T) {
	first := &fakeAuth{typ: "A", err: errors.New("no verified chain is found")}
	empty := &fakeAuth{typ: "E", caller: &security.Caller{}} // no identity: not a success
	ok := &fakeAuth{typ: "B", caller: &security.Caller{AuthSource: security.AuthSourceKubeJWT, Identities: []string{"spiffe://td/ns/a/sa/b"}}}
	never := &fakeAuth{typ: "C", caller: &security.Caller{Identities: []string{"x"}}}
	c, err := security.Authenticate(peerCtx(), []security.Authenticator{first, empty, ok, never})
	if err != nil || c != ok.caller {
		t.Fatalf("Authenticate = %v, %v", c, err)
	}
	if first.calls != 1 || empty.calls != 1 || never.calls != 0 {
		t.Fatalf("calls = %d %d %d", first.calls, empty.calls, never.calls)
	}
}

func TestAuthenticateFailureLogsEveryReason(t *testing.T) {
	logs := logtest.Capture(t)
	a := &fakeAuth{typ: "ClientCertAuthenticator", err: errors.New("no verified chain is found")}
	b := &fakeAuth{typ: "KubeJWTAuthenticator", err: errors.New("target JWT extraction error: no HTTP authorization header exists")}
	c, err := security.Authenticate(peerCtx(), []security.Authenticator{a, b})
	if c != nil {
		t.Fatal("caller returned on failure")
	}
	want := "Authenticator ClientCertAuthenticator: no verified chain is found; Authenticator KubeJWTAuthenticator: target JWT extraction error: no HTTP authorization header exists"
	var aerr *security.AuthenticationError
	if !errors.As(err, &aerr) || err.Error() != want || len(aerr.Failures) != 2 {
		t.Fatalf("err = %v", err)
	}
	if got := logs.Lines("ERROR", "\tsecurity\t", "Failed to authenticate client from 127.0.0.1:45518: "+want); len(got) != 1 {
		t.Fatalf("log lines = %q\n%s", got, logs.String())
	}
}

func TestAuthenticateNoAuthenticators(t *testing.T) {
	_ = logtest.Capture(t)
	if _, err := security.Authenticate(context.Background(), nil); err == nil || err.Error() != "no authenticator is configured" {
		t.Fatalf("err = %v", err)
	}
	if security.PeerAddress(context.Background()) != "unknown" {
		t.Fatal("PeerAddress without a peer")
	}
}

func TestKubernetesInfoString(t *testing.T) {
	k := security.KubernetesInfo{PodName: "p", PodNamespace: "n", PodUID: "u", PodServiceAccount: "s"}
	if k.String() != "Pod{Name: p, Namespace: n, UID: u, ServiceAccount: s}" {
		t.Fatal(k.String())
	}
}
