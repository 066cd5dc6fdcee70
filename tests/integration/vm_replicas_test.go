package integration

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	xdsgrpc "google.golang.org/grpc/xds"
	networking "istio.io/api/networking/v1alpha3"
	clientnetworking "istio.io/client-go/pkg/apis/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/meshplane/istiod/pilot/pkg/bootstrap"
	"github.com/meshplane/istiod/tests/istiobin"
	"github.com/meshplane/istiod/tests/kube"
	"github.com/meshplane/istiod/tests/testproc"
)

// The annotations of an auto-registered WorkloadEntry.
const (
	controllerAnn   = "istio.io/workloadController"
	connectedAnn    = "istio.io/connectedAt"
	disconnectedAnn = "istio.io/disconnectedAt"
)

// vmSetup is a namespace with the WorkloadGroup vm (service account
// vm-sa, port http 8080) and the root certificate Istio's agent trusts.
type vmSetup struct {
	env      *kube.Env
	istiodNS string
	ns       string
	rootPEM  string
	ip       string
}

func newVMSetup(t *testing.T, env *kube.Env, istiodNS string) *vmSetup {
	t.Helper()
	ns := env.NewNamespace(t, nil).Name
	wg := &clientnetworking.WorkloadGroup{ObjectMeta: metav1.ObjectMeta{Name: "vm", Namespace: ns}}
	wg.Spec.Metadata = &networking.WorkloadGroup_ObjectMeta{Labels: map[string]string{"app": "vm"}}
	wg.Spec.Template = &networking.WorkloadEntry{ServiceAccount: "vm-sa", Ports: map[string]uint32{"http": 8080}}
	if _, err := env.Istio.NetworkingV1().WorkloadGroups(ns).Create(context.Background(), wg, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return &vmSetup{env: env, istiodNS: istiodNS, ns: ns, rootPEM: rootCertPEM(t, env, ns),
		ip: fmt.Sprintf("10.208.%d.7", agentRuns.Add(1)%250)}
}

// entryName is the WorkloadEntry of the VM: <group>-<ip>.
func (v *vmSetup) entryName() string { return "vm-" + v.ip }

// vmAgent is Istio's pilot-agent as the VM, with a gRPC xDS client
// through its socket (the agent opens its upstream stream for it).
type vmAgent struct {
	agent *agentProc
	conn  *grpc.ClientConn
}

// runAgent starts the VM's agent against d's TLS xDS port and opens its
// stream; it stops when the test ends, or with stop.
func (v *vmSetup) runAgent(t *testing.T, d *istiod) *vmAgent {
	t.Helper()
	secure := d.srv.SecureGRPCAddr()
	a := startAgent(t, istiobin.AgentOptions{
		DiscoveryAddress: secure, PodName: "vm-host", Namespace: v.ns, ServiceAccount: "vm-sa",
		Token: istiobin.ServiceAccountToken(t, v.env.Kube, v.ns, "vm-sa", "istio-ca"), RootCert: []byte(v.rootPEM),
		Labels: map[string]string{"version": "v1"}, InstanceIP: v.ip, IstiodSAN: "istiod." + v.istiodNS + ".svc",
		Env: []string{"ISTIO_META_AUTO_REGISTER_GROUP=vm", fmt.Sprintf(`PROXY_CONFIG={"discoveryAddress":%q}`, secure)},
	})
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("pilot-agent log:\n%s", a.log.String())
		}
	})
	testproc.Eventually(t, time.Minute, "grpc-bootstrap.json and the XDS socket", func() (bool, string) {
		if ok, detail := a.alive(); !ok {
			t.Fatal(detail)
		}
		_, e1 := os.Stat(a.path(istiobin.GRPCBootstrapPath))
		_, e2 := os.Stat(istiobin.XDSSocket(a.dir))
		return e1 == nil && e2 == nil, fmt.Sprint(e1, e2)
	})
	bootstrapJSON, _ := localBootstrap(t, a)
	resolver, err := xdsgrpc.NewXDSResolverWithConfigForTesting(bootstrapJSON)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := grpc.NewClient("xds:///vm."+v.ns+".svc.cluster.local:8080", grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithResolvers(resolver))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	conn.Connect()
	return &vmAgent{agent: a, conn: conn}
}

// stop ends the VM: its xDS client, then its agent (and so its stream).
func (a *vmAgent) stop() {
	a.conn.Close()
	a.agent.stop()
}

// entry reads the VM's WorkloadEntry (nil: none).
func (v *vmSetup) entry(t *testing.T) *clientnetworking.WorkloadEntry {
	t.Helper()
	we, err := v.env.Istio.NetworkingV1().WorkloadEntries(v.ns).Get(context.Background(), v.entryName(), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return we
}

// awaitEntry waits until the entry satisfies cond (nil: there is none).
func (v *vmSetup) awaitEntry(t *testing.T, what string, cond func(*clientnetworking.WorkloadEntry) bool) *clientnetworking.WorkloadEntry {
	t.Helper()
	var we *clientnetworking.WorkloadEntry
	testproc.Eventually(t, time.Minute, "WorkloadEntry "+v.entryName()+" "+what, func() (bool, string) {
		we = v.entry(t)
		if we == nil {
			return cond(nil), "no entry"
		}
		return cond(we), fmt.Sprint(we.Annotations)
	})
	return we
}

// connectedTo: the entry is marked connected to replica pod.
func connectedTo(pod string) func(*clientnetworking.WorkloadEntry) bool {
	return func(we *clientnetworking.WorkloadEntry) bool {
		return we != nil && we.Annotations[controllerAnn] == pod && we.Annotations[connectedAnn] != "" && we.Annotations[disconnectedAnn] == ""
	}
}

// disconnectedFrom: the entry is marked disconnected by replica pod.
func disconnectedFrom(pod string) func(*clientnetworking.WorkloadEntry) bool {
	return func(we *clientnetworking.WorkloadEntry) bool {
		return we != nil && we.Annotations[controllerAnn] == pod && we.Annotations[connectedAnn] == "" && we.Annotations[disconnectedAnn] != ""
	}
}

func deleted(we *clientnetworking.WorkloadEntry) bool { return we == nil }

// withVMGrace names the replica and sets its grace period.
func withVMGrace(pod string, grace time.Duration) option {
	return func(a *bootstrap.PilotArgs) {
		a.PodName = pod
		a.AutoRegistration.GracePeriod = grace
	}
}

// Two replicas on one API server; Istio's pilot-agent, as a VM, connected
// to replica A, then restarted against replica B within the grace period:
// the entry is the same object throughout (never deleted), B takes it over
// (istio.io/workloadController is B's pod name, istio.io/disconnectedAt
// cleared), and when A's grace-period timer for its disconnection fires,
// A, which no longer controls it, leaves it alone.
func TestVMMovesToAnotherReplicaWithinGracePeriod(t *testing.T) {
	env := kube.Shared(t)
	istiodNS := env.NewNamespace(t, nil).Name
	// long enough for an agent to start and connect within it
	const grace = 15 * time.Second
	n := agentRuns.Add(1)
	podA, podB := fmt.Sprintf("istiod-vm-a-%d", n), fmt.Sprintf("istiod-vm-b-%d", n)
	a := startIstiod(t, env, istiodNS, withVMGrace(podA, grace))
	b := startIstiod(t, env, istiodNS, withVMGrace(podB, grace))
	v := newVMSetup(t, env, istiodNS)

	onA := v.runAgent(t, a)
	first := v.awaitEntry(t, "connected to "+podA, connectedTo(podA))
	onA.stop()
	left := v.awaitEntry(t, "marked disconnected by "+podA, disconnectedFrom(podA))
	disconnectedAt, err := time.Parse(time.RFC3339Nano, left.Annotations[disconnectedAnn])
	if err != nil {
		t.Fatalf("%s %q: %v", disconnectedAnn, left.Annotations[disconnectedAnn], err)
	}

	v.runAgent(t, b)
	moved := v.awaitEntry(t, "taken over by "+podB, connectedTo(podB))
	if moved.UID != first.UID {
		t.Fatalf("the entry was recreated (UID %s, first %s): it was deleted in between", moved.UID, first.UID)
	}
	if time.Since(disconnectedAt) >= grace {
		t.Fatalf("the agent took %v to reconnect, longer than the grace period %v: the test proves nothing", time.Since(disconnectedAt), grace)
	}

	// A's timer fires a grace period after its disconnection: the entry
	// must be there, B's, the same object, until well after. A poll of a
	// state that must not change, over the span in which it could.
	until := disconnectedAt.Add(grace + 3*time.Second)
	for time.Now().Before(until) {
		we := v.entry(t)
		switch {
		case we == nil:
			t.Fatalf("the entry was deleted %v after A's disconnection, while B holds the VM's stream", time.Since(disconnectedAt))
		case we.UID != first.UID:
			t.Fatalf("the entry was recreated %v after A's disconnection", time.Since(disconnectedAt))
		case !connectedTo(podB)(we):
			t.Fatalf("the entry is no longer B's: %v", we.Annotations)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// An istiod that stops while its VM is connected, and the VM stops while
// no istiod runs: the entry the stopped replica controlled is cleaned up
// by its successor once nobody has reconnected it for the grace period.
// A replica that stops gracefully marks the entries of the streams it
// drains disconnected before it exits (Istio's stops its queue first and
// leaves them marked connected).
//
//   - "restarted": the successor has the same pod name (a StatefulSet's,
//     or a test's restart); it takes up the grace period of the entry its
//     predecessor marked disconnected (Istio leaves it to the periodic
//     sweep, ten grace periods later);
//   - "restarted, new pod name": a Deployment's new pod; no replica
//     controls the entry, and the periodic sweep of any replica removes
//     it once it has been disconnected for the grace period (Istio's
//     sweep would find it still marked connected, and wait for 1.5 × the
//     maximum connection age);
//   - "crashed": the replica died before it could write the disconnection
//     (the entry is rewritten as it would be left: marked connected to
//     it); the successor, with the same pod name, marks it disconnected
//     at its start and deletes it a grace period later (Istio only once
//     1.5 × the maximum connection age has passed, by the sweep);
//   - "crashed, new pod name": as in Istio, the periodic sweep removes it
//     once it has been marked connected for 1.5 × the maximum connection
//     age (here 2s, so 3s) without anyone writing it.
func TestVMEntryCleanedUpAfterIstiodRestart(t *testing.T) {
	env := kube.Shared(t)
	const grace = 2 * time.Second
	for _, tc := range []struct {
		name           string
		crash, newName bool
	}{
		{"restarted", false, false},
		{"restarted, new pod name", false, true},
		{"crashed", true, false},
		{"crashed, new pod name", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			istiodNS := env.NewNamespace(t, nil).Name
			pod := fmt.Sprintf("istiod-vm-restart-%d", agentRuns.Add(1))
			first := startIstiod(t, env, istiodNS, withVMGrace(pod, grace))
			v := newVMSetup(t, env, istiodNS)
			agent := v.runAgent(t, first)
			v.awaitEntry(t, "connected to "+pod, connectedTo(pod))

			first.stop()
			agent.stop()
			we := v.awaitEntry(t, "marked disconnected by the stopped replica", disconnectedFrom(pod))
			if tc.crash {
				we.Annotations[connectedAnn] = we.Annotations[disconnectedAnn]
				delete(we.Annotations, disconnectedAnn)
				if _, err := env.Istio.NetworkingV1().WorkloadEntries(v.ns).Update(context.Background(), we, metav1.UpdateOptions{}); err != nil {
					t.Fatal(err)
				}
			}

			next := pod
			opts := []option{withVMGrace(next, grace)}
			if tc.newName {
				next = pod + "-new"
				opts = []option{withVMGrace(next, grace), func(a *bootstrap.PilotArgs) { a.Keepalive.MaxServerConnectionAge = grace }}
			}
			if tc.newName && !tc.crash {
				opts = opts[:1]
			}
			startIstiod(t, env, istiodNS, opts...)
			v.awaitEntry(t, "deleted by "+next, deleted)
		})
	}
}
