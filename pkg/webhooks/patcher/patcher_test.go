package patcher_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/meshplane/istiod/pkg/webhooks/patcher"
)

func mutating(name, rev string, hooks ...string) *admissionv1.MutatingWebhookConfiguration {
	c := &admissionv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{patcher.RevisionLabel: rev}}}
	for _, h := range hooks {
		c.Webhooks = append(c.Webhooks, admissionv1.MutatingWebhook{Name: h})
	}
	return c
}

func validating(name, rev string) *admissionv1.ValidatingWebhookConfiguration {
	return &admissionv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{patcher.RevisionLabel: rev}},
		Webhooks: []admissionv1.ValidatingWebhook{{Name: "rev.validation.istio.io"}}}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// The webhook configurations of istiod's revision trust its root: the
// injection webhooks (by name suffix) and every validation webhook; other
// revisions' configurations and other webhooks are left alone; an edited
// caBundle is restored, a new root reaches every webhook, and nothing
// unchanged is rewritten.
func TestCABundlePatched(t *testing.T) {
	client := fake.NewClientset(
		mutating("istio-sidecar-injector", "default", "rev.namespace.sidecar-injector.istio.io", "other.example.com"),
		mutating("istio-sidecar-injector-canary", "canary", "rev.namespace.sidecar-injector.istio.io"),
		validating("istio-validator-istio-system", "default"),
	)
	var writes atomic.Int64
	client.PrependReactor("update", "*", func(k8stesting.Action) (bool, runtime.Object, error) {
		writes.Add(1)
		return false, nil, nil
	})
	p := patcher.New(client, patcher.Options{CABundle: []byte("ROOT-1")})
	stop := make(chan struct{})
	defer close(stop)
	go p.Run(stop)
	ctx := context.Background()
	mw := client.AdmissionregistrationV1().MutatingWebhookConfigurations()
	vw := client.AdmissionregistrationV1().ValidatingWebhookConfigurations()
	bundles := func() (inj, other, canary, val string) {
		m, _ := mw.Get(ctx, "istio-sidecar-injector", metav1.GetOptions{})
		c, _ := mw.Get(ctx, "istio-sidecar-injector-canary", metav1.GetOptions{})
		v, _ := vw.Get(ctx, "istio-validator-istio-system", metav1.GetOptions{})
		return string(m.Webhooks[0].ClientConfig.CABundle), string(m.Webhooks[1].ClientConfig.CABundle),
			string(c.Webhooks[0].ClientConfig.CABundle), string(v.Webhooks[0].ClientConfig.CABundle)
	}
	waitFor(t, "caBundles set", func() bool { inj, _, _, val := bundles(); return inj == "ROOT-1" && val == "ROOT-1" })
	if _, other, canary, _ := bundles(); other != "" || canary != "" {
		t.Errorf("patched webhooks that are not ours: other %q, canary revision %q", other, canary)
	}
	// edited: restored
	v, _ := vw.Get(ctx, "istio-validator-istio-system", metav1.GetOptions{})
	v.Webhooks[0].ClientConfig.CABundle = []byte("tampered")
	if _, err := vw.Update(ctx, v, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "edited caBundle restored", func() bool { _, _, _, val := bundles(); return val == "ROOT-1" })
	// unchanged: not rewritten (first let the restore's own events pass:
	// the fake clientset does not refuse a write from a stale cache)
	waitFor(t, "patcher quiet", func() bool {
		n := writes.Load()
		time.Sleep(300 * time.Millisecond)
		return writes.Load() == n
	})
	before := writes.Load()
	p.SetCABundle([]byte("ROOT-1"))
	time.Sleep(200 * time.Millisecond) // a rewrite would be immediate; none may come
	if n := writes.Load() - before; n != 0 {
		t.Errorf("%d writes of unchanged configurations", n)
	}
	// a new root reaches every webhook
	p.SetCABundle([]byte("ROOT-2"))
	waitFor(t, "new root", func() bool { inj, _, _, val := bundles(); return inj == "ROOT-2" && val == "ROOT-2" })
}

// The validation webhooks fail closed once the webhook answers, not before.
func TestFailurePolicyFailOnceReady(t *testing.T) {
	ignore := admissionv1.Ignore
	v := validating("istio-validator-istio-system", "default")
	v.Webhooks[0].FailurePolicy = &ignore
	client := fake.NewClientset(v)
	var ready atomic.Bool
	p := patcher.New(client, patcher.Options{CABundle: []byte("ROOT"), RecheckAfter: 20 * time.Millisecond,
		ReadyForFailClose: func(context.Context) bool { return ready.Load() }})
	stop := make(chan struct{})
	defer close(stop)
	go p.Run(stop)
	vw := client.AdmissionregistrationV1().ValidatingWebhookConfigurations()
	policy := func() admissionv1.FailurePolicyType {
		got, _ := vw.Get(context.Background(), v.Name, metav1.GetOptions{})
		return *got.Webhooks[0].FailurePolicy
	}
	waitFor(t, "caBundle set", func() bool {
		got, _ := vw.Get(context.Background(), v.Name, metav1.GetOptions{})
		return string(got.Webhooks[0].ClientConfig.CABundle) == "ROOT"
	})
	time.Sleep(100 * time.Millisecond) // several rechecks while not ready
	if policy() != admissionv1.Ignore {
		t.Fatal("failed closed before the webhook answered")
	}
	ready.Store(true)
	waitFor(t, "failurePolicy Fail", func() bool { return policy() == admissionv1.Fail })
}

// A replica that loses leadership and wins it again patches again.
func TestPatchesAgainAfterLeadershipReturns(t *testing.T) {
	client := fake.NewClientset(validating("istio-validator-istio-system", "default"))
	p := patcher.New(client, patcher.Options{CABundle: []byte("ROOT")})
	vw := client.AdmissionregistrationV1().ValidatingWebhookConfigurations()
	for term := 0; term < 2; term++ {
		stop := make(chan struct{})
		done := make(chan struct{})
		go func() {
			p.Run(stop)
			close(done)
		}()
		waitFor(t, "caBundle set", func() bool {
			got, _ := vw.Get(context.Background(), "istio-validator-istio-system", metav1.GetOptions{})
			return string(got.Webhooks[0].ClientConfig.CABundle) == "ROOT"
		})
		close(stop)
		<-done
		got, _ := vw.Get(context.Background(), "istio-validator-istio-system", metav1.GetOptions{})
		got.Webhooks[0].ClientConfig.CABundle = nil
		if _, err := vw.Update(context.Background(), got, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}
