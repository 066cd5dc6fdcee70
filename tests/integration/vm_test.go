package integration

import (
	"context"
	"fmt"
	"net"
	"os"
	"strconv"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	xdsgrpc "google.golang.org/grpc/xds"
	metav1alpha1 "istio.io/api/meta/v1alpha1"
	networking "istio.io/api/networking/v1alpha3"
	clientnetworking "istio.io/client-go/pkg/apis/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/meshplane/istiod/pilot/pkg/bootstrap"
	"github.com/meshplane/istiod/tests/istiobin"
	"github.com/meshplane/istiod/tests/kube"
	"github.com/meshplane/istiod/tests/testproc"
)

// Istio's own pilot-agent as a VM (ISTIO_META_AUTO_REGISTER_GROUP, a
// service-account token, xDS over TLS, a readiness probe): istiod creates
// the WorkloadEntry from the WorkloadGroup with Istio's name, labels,
// annotations and owner; the probe's result becomes its Healthy
// condition; the entry is deleted a grace period after the agent stops.
// The agent runs proxyless (no Envoy here): a grpc-go xDS client through
// its socket opens the upstream stream, as Envoy would.
func TestVMAutoRegistration(t *testing.T) {
	env := kube.Shared(t)
	istiodNS := env.NewNamespace(t, nil).Name
	ns := env.NewNamespace(t, nil).Name
	const gracePeriod = 2 * time.Second
	istiodPod := fmt.Sprintf("istiod-vm-%d", agentRuns.Add(1))
	d := startIstiod(t, env, istiodNS, func(a *bootstrap.PilotArgs) {
		a.PodName = istiodPod
		a.AutoRegistration.GracePeriod = gracePeriod
	})
	ctx := context.Background()

	wg := &clientnetworking.WorkloadGroup{ObjectMeta: metav1.ObjectMeta{Name: "vm", Namespace: ns}}
	wg.Spec.Metadata = &networking.WorkloadGroup_ObjectMeta{Labels: map[string]string{"app": "vm"}, Annotations: map[string]string{"team": "a"}}
	wg.Spec.Template = &networking.WorkloadEntry{ServiceAccount: "vm-sa", Ports: map[string]uint32{"http": 8080}}
	created, err := env.Istio.NetworkingV1().WorkloadGroups(ns).Create(ctx, wg, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}

	// the application the probe checks
	probe, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for {
			c, err := probe.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	probePort := probe.Addr().(*net.TCPAddr).Port

	rootPEM := rootCertPEM(t, env, ns)
	ip := fmt.Sprintf("10.206.%d.7", agentRuns.Add(1))
	secure := d.srv.SecureGRPCAddr()
	proxyConfig := fmt.Sprintf(`{"discoveryAddress":%q,"readinessProbe":{"tcpSocket":{"host":"127.0.0.1","port":%d},"periodSeconds":1,"timeoutSeconds":1}}`,
		secure, probePort)
	agent := startAgent(t, istiobin.AgentOptions{
		DiscoveryAddress: secure, PodName: "vm-host", Namespace: ns, ServiceAccount: "vm-sa",
		Token: istiobin.ServiceAccountToken(t, env.Kube, ns, "vm-sa", "istio-ca"), RootCert: []byte(rootPEM),
		Labels: map[string]string{"version": "v1"}, InstanceIP: ip, IstiodSAN: "istiod." + istiodNS + ".svc",
		Env: []string{"ISTIO_META_AUTO_REGISTER_GROUP=vm", "PROXY_CONFIG=" + proxyConfig},
	})
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("pilot-agent log:\n%s", agent.log.String())
		}
	})
	testproc.Eventually(t, time.Minute, "grpc-bootstrap.json and the XDS socket", func() (bool, string) {
		if ok, detail := agent.alive(); !ok {
			t.Fatal(detail)
		}
		_, e1 := os.Stat(agent.path(istiobin.GRPCBootstrapPath))
		_, e2 := os.Stat(istiobin.XDSSocket(agent.dir))
		return e1 == nil && e2 == nil, fmt.Sprint(e1, e2)
	})
	bootstrapJSON, node := localBootstrap(t, agent)
	if md, _ := node["metadata"].(map[string]any); md["AUTO_REGISTER_GROUP"] != "vm" {
		t.Fatalf("the agent's node metadata has no AUTO_REGISTER_GROUP: %v", node["metadata"])
	}
	resolver, err := xdsgrpc.NewXDSResolverWithConfigForTesting(bootstrapJSON)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := grpc.NewClient("xds:///vm."+ns+".svc.cluster.local:8080", grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithResolvers(resolver))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.Connect() // the resolver opens the xDS stream through the agent

	name := "vm-" + ip
	entries := env.Istio.NetworkingV1().WorkloadEntries(ns)
	var we *clientnetworking.WorkloadEntry
	testproc.Eventually(t, time.Minute, "WorkloadEntry "+name, func() (bool, string) {
		if ok, detail := agent.alive(); !ok {
			t.Fatal(detail)
		}
		we, err = entries.Get(ctx, name, metav1.GetOptions{})
		return err == nil, fmt.Sprint(err, d.warnings())
	})
	wantLabels := map[string]string{"app": "vm", "version": "v1"}
	for k, v := range wantLabels {
		if we.Labels[k] != v || we.Spec.Labels[k] != v {
			t.Errorf("label %s: metadata %q, spec %q, want %q", k, we.Labels[k], we.Spec.Labels[k], v)
		}
	}
	ann := we.Annotations
	if ann["istio.io/autoRegistrationGroup"] != "vm" || ann["istio.io/workloadController"] != istiodPod || ann["team"] != "a" ||
		ann["proxy.istio.io/health-checks-enabled"] != "true" || ann["istio.io/disconnectedAt"] != "" {
		t.Errorf("annotations %v", ann)
	}
	if _, err := time.Parse(time.RFC3339Nano, ann["istio.io/connectedAt"]); err != nil {
		t.Errorf("connectedAt %q: %v", ann["istio.io/connectedAt"], err)
	}
	if o := we.OwnerReferences; len(o) != 1 || o[0].APIVersion != "networking.istio.io/v1" || o[0].Kind != "WorkloadGroup" ||
		o[0].Name != "vm" || o[0].UID != created.UID || o[0].Controller == nil || !*o[0].Controller {
		t.Errorf("owner references %+v", o)
	}
	if we.Spec.Address != ip || we.Spec.ServiceAccount != "vm-sa" || we.Spec.Ports["http"] != 8080 {
		t.Errorf("spec %v", &we.Spec)
	}

	healthy := func(want string) {
		t.Helper()
		testproc.Eventually(t, time.Minute, "Healthy="+want, func() (bool, string) {
			we, err := entries.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			for _, c := range we.Status.Conditions {
				if c.Type == "Healthy" {
					return c.Status == want, conditionString(c)
				}
			}
			return false, fmt.Sprint(we.Status.Conditions)
		})
	}
	healthy("True")
	probe.Close() // the probe fails
	healthy("False")

	conn.Close()
	agent.stop()
	testproc.Eventually(t, time.Minute, "WorkloadEntry deleted after the grace period", func() (bool, string) {
		we, err := entries.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, ""
		}
		if err != nil {
			return false, err.Error()
		}
		return false, fmt.Sprint(we.Annotations)
	})
}

func conditionString(c *metav1alpha1.IstioCondition) string {
	return c.Type + "=" + c.Status + " " + c.Message + " probed " + strconv.FormatInt(c.GetLastProbeTime().GetSeconds(), 10)
}
