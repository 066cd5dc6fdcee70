package patcher_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/meshplane/istiod/pkg/monitoring"
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

// failingOpen is a validation configuration as Istio's chart installs it.
func failingOpen(name string) *admissionv1.ValidatingWebhookConfiguration {
	v := validating(name, "default")
	ignore := admissionv1.Ignore
	v.Webhooks[0].FailurePolicy = &ignore
	return v
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

// counter reads a counter of the process registry: the series of name
// whose labels include labels (0 when there is none yet).
func counter(t *testing.T, name string, labels map[string]string) float64 {
	t.Helper()
	mfs, err := monitoring.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	series:
		for _, m := range mf.GetMetric() {
			have := map[string]string{}
			for _, l := range m.GetLabel() {
				have[l.GetName()] = l.GetValue()
			}
			for k, v := range labels {
				if have[k] != v {
					continue series
				}
			}
			return m.GetCounter().GetValue()
		}
	}
	return 0
}

// countWrites counts the updates the fake clientset receives.
func countWrites(client *fake.Clientset) *atomic.Int64 {
	var n atomic.Int64
	client.PrependReactor("update", "*", func(k8stesting.Action) (bool, runtime.Object, error) {
		n.Add(1)
		return false, nil, nil
	})
	return &n
}

// quiet waits until no write has come for a while: the fake clientset does
// not refuse a write from a stale cache, so a patch's own events may cause
// one more look (never a write) first.
func quiet(t *testing.T, writes *atomic.Int64) {
	t.Helper()
	waitFor(t, "patcher quiet", func() bool {
		n := writes.Load()
		time.Sleep(300 * time.Millisecond)
		return writes.Load() == n
	})
}

func run(t *testing.T, p *patcher.Patcher) {
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		p.Run(stop)
		close(done)
	}()
	t.Cleanup(func() {
		close(stop)
		<-done
	})
}

// The webhook configurations of istiod's revision trust its root: the
// injection webhooks (by name suffix) and every validation webhook; other
// revisions' configurations and other webhooks are left alone; an edited
// caBundle is restored, a new root reaches every webhook, and nothing
// unchanged is rewritten. The writes are counted as Istio counts them.
func TestCABundlePatched(t *testing.T) {
	client := fake.NewClientset(
		mutating("istio-sidecar-injector", "default", "rev.namespace.sidecar-injector.istio.io", "other.example.com"),
		mutating("istio-sidecar-injector-canary", "canary", "rev.namespace.sidecar-injector.istio.io"),
		validating("istio-validator-istio-system", "default"),
	)
	writes := countWrites(client)
	attempts := map[string]string{"name": "sidecar-injector.istio.io"}
	attemptsBefore := counter(t, "webhook_patch_attempts_total", attempts)
	updatesBefore := counter(t, "galley_validation_config_updates", nil)
	p := patcher.New(client, patcher.Options{CABundle: []byte("ROOT-1")})
	run(t, p)
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
	if got := counter(t, "webhook_patch_attempts_total", attempts) - attemptsBefore; got != 1 {
		t.Errorf("webhook_patch_attempts_total{name=sidecar-injector.istio.io} moved by %v for one injection configuration patched, want 1", got)
	}
	if got := counter(t, "galley_validation_config_updates", nil) - updatesBefore; got != 1 {
		t.Errorf("galley_validation_config_updates moved by %v for one validation configuration patched, want 1", got)
	}
	// edited: restored
	v, _ := vw.Get(ctx, "istio-validator-istio-system", metav1.GetOptions{})
	v.Webhooks[0].ClientConfig.CABundle = []byte("tampered")
	if _, err := vw.Update(ctx, v, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "edited caBundle restored", func() bool { _, _, _, val := bundles(); return val == "ROOT-1" })
	// unchanged: not rewritten, not counted
	quiet(t, writes)
	before, attemptsBefore, updatesBefore := writes.Load(), counter(t, "webhook_patch_attempts_total", attempts), counter(t, "galley_validation_config_updates", nil)
	p.SetCABundle([]byte("ROOT-1"))
	time.Sleep(200 * time.Millisecond) // a rewrite would be immediate; none may come
	if n := writes.Load() - before; n != 0 {
		t.Errorf("%d writes of unchanged configurations", n)
	}
	if counter(t, "webhook_patch_attempts_total", attempts) != attemptsBefore || counter(t, "galley_validation_config_updates", nil) != updatesBefore {
		t.Error("nothing written, yet counted")
	}
	// a new root reaches every webhook
	p.SetCABundle([]byte("ROOT-2"))
	waitFor(t, "new root", func() bool { inj, _, _, val := bundles(); return inj == "ROOT-2" && val == "ROOT-2" })
	if got := counter(t, "webhook_patch_attempts_total", attempts) - attemptsBefore; got != 1 {
		t.Errorf("webhook_patch_attempts_total moved by %v for the new root, want 1", got)
	}
}

// probe is a ReadyForFailClose whose answer the test sets, counting the
// times it is asked.
type probe struct {
	ready atomic.Bool
	asked atomic.Int64
}

func (p *probe) check(context.Context) (bool, string) {
	p.asked.Add(1)
	if p.ready.Load() {
		return true, ""
	}
	return false, "not yet"
}

func policy(t *testing.T, client *fake.Clientset, name string) admissionv1.FailurePolicyType {
	t.Helper()
	got, err := client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Webhooks[0].FailurePolicy == nil {
		return ""
	}
	return *got.Webhooks[0].FailurePolicy
}

// As Istio's validation controller: a configuration failing open gets the
// caBundle at once and keeps its policy, checked again with a backoff and
// not rewritten meanwhile, until the webhook answers; then it fails
// closed. The answer is kept: a configuration added later, or set back to
// Ignore, fails closed without asking again.
func TestFailurePolicyFailOnceReady(t *testing.T) {
	const name = "istio-validator-istio-system"
	client := fake.NewClientset(failingOpen(name))
	writes := countWrites(client)
	pr := &probe{}
	p := patcher.New(client, patcher.Options{CABundle: []byte("ROOT"), RetryBase: time.Millisecond, RetryMax: 20 * time.Millisecond,
		ReadyForFailClose: pr.check})
	run(t, p)
	vw := client.AdmissionregistrationV1().ValidatingWebhookConfigurations()
	waitFor(t, "checked again while not ready", func() bool { return pr.asked.Load() >= 5 })
	got, _ := vw.Get(context.Background(), name, metav1.GetOptions{})
	if string(got.Webhooks[0].ClientConfig.CABundle) != "ROOT" {
		t.Errorf("caBundle %q while the webhook does not answer yet: Istio writes it at once", got.Webhooks[0].ClientConfig.CABundle)
	}
	if p := policy(t, client, name); p != admissionv1.Ignore {
		t.Fatalf("failurePolicy %s before the webhook answered", p)
	}
	if n := writes.Load(); n != 1 {
		t.Errorf("%d writes while not ready, want the caBundle's only", n)
	}

	pr.ready.Store(true)
	waitFor(t, "failurePolicy Fail", func() bool { return policy(t, client, name) == admissionv1.Fail })
	asked := pr.asked.Load()

	// a configuration added later, one set back to Ignore: no new check
	if _, err := vw.Create(context.Background(), failingOpen("istio-validator-later"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the later configuration fails closed", func() bool { return policy(t, client, "istio-validator-later") == admissionv1.Fail })
	cur, _ := vw.Get(context.Background(), name, metav1.GetOptions{})
	ignore := admissionv1.Ignore
	cur.Webhooks[0].FailurePolicy = &ignore
	if _, err := vw.Update(context.Background(), cur, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "set back to Fail", func() bool { return policy(t, client, name) == admissionv1.Fail })
	if n := pr.asked.Load() - asked; n != 0 {
		t.Errorf("asked %d more times after the webhook answered", n)
	}
}

// Every configuration the patcher watches fails closed when the webhook
// first answers, not only the one being looked at.
func TestAllValidationConfigurationsFailClosed(t *testing.T) {
	client := fake.NewClientset(failingOpen("a"), failingOpen("b"), failingOpen("c"))
	pr := &probe{}
	pr.ready.Store(true)
	run(t, patcher.New(client, patcher.Options{CABundle: []byte("ROOT"), ReadyForFailClose: pr.check}))
	for _, n := range []string{"a", "b", "c"} {
		waitFor(t, n+" fails closed", func() bool { return policy(t, client, n) == admissionv1.Fail })
	}
}

// A configuration failing closed already (or saying nothing: the API's
// default is Fail) needs no check and no write once it trusts the root.
func TestFailClosedConfigurationNotChecked(t *testing.T) {
	fail := admissionv1.Fail
	v := validating("closed", "default")
	v.Webhooks[0].FailurePolicy = &fail
	v.Webhooks[0].ClientConfig.CABundle = []byte("ROOT")
	unset := validating("unset", "default")
	unset.Webhooks[0].ClientConfig.CABundle = []byte("ROOT")
	client := fake.NewClientset(v, unset)
	writes := countWrites(client)
	pr := &probe{}
	p := patcher.New(client, patcher.Options{CABundle: []byte("ROOT"), ReadyForFailClose: pr.check})
	run(t, p)
	p.SetCABundle([]byte("ROOT")) // a look at both once running
	time.Sleep(200 * time.Millisecond)
	if pr.asked.Load() != 0 || writes.Load() != 0 {
		t.Errorf("asked %d times, %d writes, for configurations that need nothing", pr.asked.Load(), writes.Load())
	}
	if got := policy(t, client, "unset"); got != "" {
		t.Errorf("an unset failurePolicy was written: %s", got)
	}
}

// A refused write is counted with its reason and retried.
func TestValidationUpdateErrorCounted(t *testing.T) {
	client := fake.NewClientset(validating("istio-validator-istio-system", "default"))
	var refused atomic.Bool
	client.PrependReactor("update", "validatingwebhookconfigurations", func(k8stesting.Action) (bool, runtime.Object, error) {
		if refused.CompareAndSwap(false, true) {
			return true, nil, apierrors.NewConflict(schema.GroupResource{Group: "admissionregistration.k8s.io", Resource: "validatingwebhookconfigurations"},
				"istio-validator-istio-system", errors.New("the object has been modified"))
		}
		return false, nil, nil
	})
	conflict := map[string]string{"reason": "Conflict"}
	before := counter(t, "galley_validation_config_update_error", conflict)
	run(t, patcher.New(client, patcher.Options{CABundle: []byte("ROOT"), RetryBase: time.Millisecond}))
	vw := client.AdmissionregistrationV1().ValidatingWebhookConfigurations()
	waitFor(t, "caBundle set on the retry", func() bool {
		got, _ := vw.Get(context.Background(), "istio-validator-istio-system", metav1.GetOptions{})
		return string(got.Webhooks[0].ClientConfig.CABundle) == "ROOT"
	})
	if got := counter(t, "galley_validation_config_update_error", conflict) - before; got != 1 {
		t.Errorf("galley_validation_config_update_error{reason=Conflict} moved by %v, want 1", got)
	}
}

// Istio's webhook patcher counts the injection configurations it cannot
// patch: a failed write (a failure and a retry, by configuration name), a
// configuration without an injection webhook, a configuration gone.
func TestInjectionPatchFailuresCounted(t *testing.T) {
	client := fake.NewClientset(
		mutating("istio-sidecar-injector", "default", "rev.namespace.sidecar-injector.istio.io"),
		mutating("no-injection", "default", "other.example.com"),
	)
	var refused atomic.Bool
	client.PrependReactor("update", "mutatingwebhookconfigurations", func(k8stesting.Action) (bool, runtime.Object, error) {
		if refused.CompareAndSwap(false, true) {
			return true, nil, errors.New("etcd is unhappy")
		}
		return false, nil, nil
	})
	failure := func(name, reason string) float64 {
		return counter(t, "webhook_patch_failures_total", map[string]string{"name": name, "reason": reason})
	}
	retries := func() float64 {
		return counter(t, "webhook_patch_retries_total", map[string]string{"name": "istio-sidecar-injector"})
	}
	attempts := func() float64 {
		return counter(t, "webhook_patch_attempts_total", map[string]string{"name": "sidecar-injector.istio.io"})
	}
	updateBefore, retriesBefore, attemptsBefore := failure("istio-sidecar-injector", "webhook_update_failure"), retries(), attempts()
	entryBefore := failure("no-injection", "webhook_entry_not_found")
	goneBefore := failure("no-injection", "webhook_config_not_found")
	run(t, patcher.New(client, patcher.Options{CABundle: []byte("ROOT"), RetryBase: time.Millisecond}))
	mw := client.AdmissionregistrationV1().MutatingWebhookConfigurations()
	waitFor(t, "caBundle set on the retry", func() bool {
		got, _ := mw.Get(context.Background(), "istio-sidecar-injector", metav1.GetOptions{})
		return string(got.Webhooks[0].ClientConfig.CABundle) == "ROOT"
	})
	if got := failure("istio-sidecar-injector", "webhook_update_failure") - updateBefore; got != 1 {
		t.Errorf("webhook_patch_failures_total{reason=webhook_update_failure} moved by %v, want 1", got)
	}
	if got := retries() - retriesBefore; got != 1 {
		t.Errorf("webhook_patch_retries_total moved by %v, want 1", got)
	}
	if got := attempts() - attemptsBefore; got != 2 {
		t.Errorf("webhook_patch_attempts_total moved by %v for a failed write and its retry, want 2", got)
	}
	waitFor(t, "a configuration without an injection webhook counted", func() bool {
		return failure("no-injection", "webhook_entry_not_found")-entryBefore >= 1
	})
	if err := mw.Delete(context.Background(), "no-injection", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a deleted configuration counted", func() bool {
		return failure("no-injection", "webhook_config_not_found")-goneBefore == 1
	})
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

// InjectionOnly (an external istiod in a remote cluster) patches the
// injection webhooks and never reads nor writes a validation
// configuration.
func TestInjectionOnly(t *testing.T) {
	client := fake.NewClientset(mutating("istio-sidecar-injector", "default", "rev.namespace.sidecar-injector.istio.io"),
		failingOpen("istio-validator-istio-system"))
	var validationCalls atomic.Int64
	client.PrependReactor("*", "validatingwebhookconfigurations", func(k8stesting.Action) (bool, runtime.Object, error) {
		validationCalls.Add(1)
		return false, nil, nil
	})
	p := patcher.New(client, patcher.Options{CABundle: []byte("ROOT"), InjectionOnly: true,
		ReadyForFailClose: func(context.Context) (bool, string) { return true, "" }})
	stop := make(chan struct{})
	defer close(stop)
	go p.Run(stop)
	waitFor(t, "the injection webhook patched", func() bool {
		c, err := client.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(context.Background(), "istio-sidecar-injector", metav1.GetOptions{})
		return err == nil && string(c.Webhooks[0].ClientConfig.CABundle) == "ROOT"
	})
	p.SetCABundle([]byte("ROOT-2"))
	waitFor(t, "the new root", func() bool {
		c, err := client.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(context.Background(), "istio-sidecar-injector", metav1.GetOptions{})
		return err == nil && string(c.Webhooks[0].ClientConfig.CABundle) == "ROOT-2"
	})
	if n := validationCalls.Load(); n != 0 {
		t.Fatalf("%d calls on validation configurations", n)
	}
}
