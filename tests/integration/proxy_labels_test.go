package integration

import (
	"fmt"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	securityv1 "istio.io/api/security/v1"
	typev1beta1 "istio.io/api/type/v1beta1"
	clientsecurity "istio.io/client-go/pkg/apis/security/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/meshplane/istiod/pilot/pkg/xds"
	"github.com/meshplane/istiod/pilot/pkg/xds/adsc"
	"github.com/meshplane/istiod/tests/kube"
)

// listenersMention reports whether any listener of a response names s.
func listenersMention(t *testing.T, r *adsc.Response, s string) bool {
	t.Helper()
	for _, m := range r.Resources {
		b, err := protojson.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), s) {
			return true
		}
	}
	return false
}

// A proxy's labels are its pod's, as Istio takes them from the registry:
// labelling a connected proxy's pod applies the policy that now selects it
// without a reconnect, and labels a proxy only claims in its metadata
// select nothing.
func TestProxyLabelsFollowThePod(t *testing.T) {
	env := kube.Shared(t)
	ns := env.NewNamespace(t, nil).Name
	d := startIstiod(t, env, ns)
	net := fmt.Sprintf("10.203.%d", 100+xdsRuns.Add(1))
	createService(t, env, ns, "app")
	runningPod(t, env, ns, "app-1", net+".10", "app", map[string]string{"app": "app"})
	runningPod(t, env, ns, "app-2", net+".11", "app", map[string]string{"app": "app"})
	ap := &clientsecurity.AuthorizationPolicy{ObjectMeta: metav1.ObjectMeta{Name: "quarantine", Namespace: ns},
		Spec: securityv1.AuthorizationPolicy{
			Selector: &typev1beta1.WorkloadSelector{MatchLabels: map[string]string{"quarantine": "true"}},
			Action:   securityv1.AuthorizationPolicy_DENY,
			Rules:    []*securityv1.Rule{{From: []*securityv1.Rule_From{{Source: &securityv1.Source{Namespaces: []string{"outside"}}}}}},
		}}
	if _, err := env.Istio.SecurityV1().AuthorizationPolicies(ns).Create(registryCtx, ap, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	const policy = "policy[quarantine]"
	dial := func(pod, ip string, labels map[string]any) (*adsClient, *adsc.Response) {
		a := dialADS(t, d, adsc.Config{NodeID: "sidecar~" + ip + "~" + pod + "." + ns + "~" + ns + ".svc.cluster.local",
			Metadata: map[string]any{"NAMESPACE": ns, "CLUSTER_ID": "Kubernetes", "LABELS": labels}})
		if err := a.c.Watch(xds.ListenerType); err != nil {
			t.Fatal(err)
		}
		r, err := a.c.Next(xdsWait)
		if err != nil || r.TypeURL != xds.ListenerType {
			t.Fatalf("first listeners: %v %v", r, err)
		}
		return a, r
	}
	eventually(t, "istiod holds the policy", func() (bool, string) {
		code, body := d.get("/debug/configz")
		return code == 200 && strings.Contains(string(body), "quarantine"), fmt.Sprint(code)
	})

	own, r := dial("app-1", net+".10", map[string]any{"app": "app"})
	if listenersMention(t, r, policy) {
		t.Fatal("the policy applies before the pod carries its label")
	}
	labelPod(t, env, ns, "app-1", map[string]string{"quarantine": "true"})
	eventually(t, "the policy applies once the pod is labelled, without a reconnect", func() (bool, string) {
		r, err := own.c.Next(xdsWait)
		if err != nil {
			return false, err.Error()
		}
		return r.TypeURL == xds.ListenerType && listenersMention(t, r, policy), "a push without the policy"
	})

	// the snapshot holds the policy now. A proxy whose metadata claims a
	// label its pod does not have: the claim selects nothing
	_, liar := dial("app-2", net+".11", map[string]any{"app": "app", "quarantine": "true"})
	if listenersMention(t, liar, policy) {
		t.Error("a label claimed only in the proxy's metadata applied a policy: the registry's labels must win")
	}
}
