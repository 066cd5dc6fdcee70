package patcher

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/meshplane/istiod/pkg/log"
)

var scope = log.RegisterScope("webhookpatcher", "webhook configuration caBundle patching")

// RevisionLabel selects the webhook configurations of a revision.
const RevisionLabel = "istio.io/rev"

// Options configure a Patcher.
type Options struct {
	// Revision is istiod's revision ("" means "default").
	Revision string
	// CABundle is the root certificate PEM the webhooks must trust.
	CABundle []byte
	// InjectionSuffix selects the mutating webhooks patched: Istio patches
	// those whose name ends with "sidecar-injector.istio.io".
	InjectionSuffix string
	// ReadyForFailClose reports whether the validation webhook answers
	// (Istio dry-runs an invalid Gateway and expects the webhook's
	// denial). Until it does the validation webhooks keep their failure
	// policy; once it does they are set to Fail, so that nothing unvalidated
	// gets in. Nil: the failure policy is left alone.
	ReadyForFailClose func(ctx context.Context) bool
	// RecheckAfter is how soon a configuration is looked at again while the
	// webhook is not ready (default 5 s).
	RecheckAfter time.Duration
}

// Patcher sets the caBundle of istiod's webhook configurations.
type Patcher struct {
	client kubernetes.Interface
	opts   Options

	mu     sync.Mutex
	bundle []byte
	cur    *term // the running term (nil while not leading)
}

// term is one run (one leadership term): its informers and queue start and
// end with it, so a replica that leads again later starts afresh.
type term struct {
	factory informers.SharedInformerFactory
	queue   workqueue.TypedRateLimitingInterface[key]
}

type key struct {
	mutating bool
	name     string
}

// New builds a patcher; Run starts it.
func New(client kubernetes.Interface, opts Options) *Patcher {
	if opts.Revision == "" {
		opts.Revision = "default"
	}
	if opts.InjectionSuffix == "" {
		opts.InjectionSuffix = "sidecar-injector.istio.io"
	}
	if opts.RecheckAfter <= 0 {
		opts.RecheckAfter = 5 * time.Second
	}
	return &Patcher{client: client, opts: opts, bundle: opts.CABundle}
}

// start builds and starts a term's informers; they stop with stop.
func (p *Patcher) start(stop <-chan struct{}) (*term, []cache.InformerSynced) {
	t := &term{queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[key](),
		workqueue.TypedRateLimitingQueueConfig[key]{Name: "webhookpatcher"})}
	t.factory = informers.NewSharedInformerFactoryWithOptions(p.client, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.LabelSelector = RevisionLabel + "=" + p.opts.Revision
	}))
	mw := t.factory.Admissionregistration().V1().MutatingWebhookConfigurations().Informer()
	vw := t.factory.Admissionregistration().V1().ValidatingWebhookConfigurations().Informer()
	for _, w := range []struct {
		inf      cache.SharedIndexInformer
		mutating bool
	}{{mw, true}, {vw, false}} {
		mutating := w.mutating
		enqueue := func(o any) {
			if m, ok := o.(metav1.Object); ok {
				t.queue.Add(key{mutating: mutating, name: m.GetName()})
			}
		}
		if _, err := w.inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: enqueue, UpdateFunc: func(_, o any) { enqueue(o) }}); err != nil {
			scope.Errorf("webhook configuration informer refused the handler: %v", err)
		}
	}
	t.factory.Start(stop)
	return t, []cache.InformerSynced{mw.HasSynced, vw.HasSynced}
}

// SetCABundle publishes a new root (after rotation) to every webhook.
func (p *Patcher) SetCABundle(b []byte) {
	p.mu.Lock()
	p.bundle = bytes.Clone(b)
	t := p.cur
	p.mu.Unlock()
	if t == nil {
		return // the next term starts from the new bundle
	}
	v1 := t.factory.Admissionregistration().V1()
	for _, m := range v1.MutatingWebhookConfigurations().Informer().GetStore().List() {
		t.queue.Add(key{mutating: true, name: m.(metav1.Object).GetName()})
	}
	for _, v := range v1.ValidatingWebhookConfigurations().Informer().GetStore().List() {
		t.queue.Add(key{name: v.(metav1.Object).GetName()})
	}
}

// Run patches until stop closes. It may run again later (a new leadership
// term), never twice at once.
func (p *Patcher) Run(stop <-chan struct{}) {
	t, synced := p.start(stop)
	defer t.queue.ShutDown()
	if !cache.WaitForCacheSync(stop, synced...) {
		return
	}
	p.mu.Lock()
	p.cur = t
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		p.cur = nil
		p.mu.Unlock()
	}()
	go func() {
		<-stop
		t.queue.ShutDown()
	}()
	for p.next(t) {
	}
}

func (p *Patcher) next(t *term) bool {
	k, quit := t.queue.Get()
	if quit {
		return false
	}
	defer t.queue.Done(k)
	if err := p.patch(t, k); err != nil {
		scope.Warnf("webhook configuration %s: %v (retrying)", k.name, err)
		t.queue.AddRateLimited(k)
		return true
	}
	t.queue.Forget(k)
	return true
}

// patch sets the caBundle of the configuration's webhooks, writing only
// when one differs.
func (p *Patcher) patch(t *term, k key) error {
	p.mu.Lock()
	bundle := p.bundle
	p.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	v1 := t.factory.Admissionregistration().V1()
	api := p.client.AdmissionregistrationV1()
	if k.mutating {
		cur, err := v1.MutatingWebhookConfigurations().Lister().Get(k.name)
		if err != nil {
			return ignoreNotFound(err)
		}
		upd := cur.DeepCopy()
		if !setBundles(upd.Webhooks, func(w *admissionv1.MutatingWebhook) (string, *admissionv1.WebhookClientConfig) {
			return w.Name, &w.ClientConfig
		}, p.isInjection, bundle) {
			return nil
		}
		_, err = api.MutatingWebhookConfigurations().Update(ctx, upd, metav1.UpdateOptions{})
		return logged("MutatingWebhookConfiguration", k.name, err)
	}
	cur, err := v1.ValidatingWebhookConfigurations().Lister().Get(k.name)
	if err != nil {
		return ignoreNotFound(err)
	}
	upd := cur.DeepCopy()
	changed := setBundles(upd.Webhooks, func(w *admissionv1.ValidatingWebhook) (string, *admissionv1.WebhookClientConfig) {
		return w.Name, &w.ClientConfig
	}, func(string) bool { return true }, bundle)
	if p.opts.ReadyForFailClose != nil && !failsClosed(upd) {
		if p.opts.ReadyForFailClose(ctx) {
			fail := admissionv1.Fail
			for i := range upd.Webhooks {
				upd.Webhooks[i].FailurePolicy = &fail
			}
			changed = true
			scope.Infof("validation webhook answers: failurePolicy of %s set to Fail", k.name)
		} else {
			t.queue.AddAfter(k, p.opts.RecheckAfter)
		}
	}
	if !changed {
		return nil
	}
	_, err = api.ValidatingWebhookConfigurations().Update(ctx, upd, metav1.UpdateOptions{})
	return logged("ValidatingWebhookConfiguration", k.name, err)
}

// failsClosed reports whether every webhook of c fails closed.
func failsClosed(c *admissionv1.ValidatingWebhookConfiguration) bool {
	for _, w := range c.Webhooks {
		if w.FailurePolicy == nil || *w.FailurePolicy != admissionv1.Fail {
			return false
		}
	}
	return true
}

// isInjection selects the mutating webhooks istiod serves.
func (p *Patcher) isInjection(name string) bool {
	return strings.HasSuffix(name, p.opts.InjectionSuffix)
}

// setBundles sets bundle on the selected webhooks and reports whether one
// changed.
func setBundles[W any](hooks []W, config func(*W) (string, *admissionv1.WebhookClientConfig), selected func(string) bool, bundle []byte) bool {
	changed := false
	for i := range hooks {
		name, cc := config(&hooks[i])
		if selected(name) && !bytes.Equal(cc.CABundle, bundle) {
			cc.CABundle = bundle
			changed = true
		}
	}
	return changed
}

func logged(kind, name string, err error) error {
	if err == nil {
		scope.Infof("patched caBundle of %s %s", kind, name)
	}
	return err
}

// ignoreNotFound: a configuration deleted meanwhile needs nothing.
func ignoreNotFound(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
