package patcher

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"sync/atomic"
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
	// InjectionOnly: only the injection webhooks are patched, the
	// validation configurations neither watched nor written (what Istio's
	// istiod does in a remote cluster it controls).
	InjectionOnly bool
	// ReadyForFailClose reports whether the validation webhook answers,
	// or why not (DryRunInvalidGateway is Istio's check). Until it does,
	// the validation webhooks that fail open keep their failure policy and
	// are looked at again with a backoff; once it has (it is not asked
	// again), they are set to Fail, so that nothing unvalidated gets in.
	// Nil: the failure policy is left alone.
	ReadyForFailClose func(ctx context.Context) (bool, string)
	// RetryBase and RetryMax bound the backoff of a configuration looked
	// at again (default Istio's: 100 ms doubling up to 1 min for the
	// validation configurations; 100 ms five times, then 1 min, for the
	// injection ones).
	RetryBase, RetryMax time.Duration
}

// Patcher sets the caBundle of istiod's webhook configurations and makes
// its validation webhooks fail closed.
type Patcher struct {
	client kubernetes.Interface
	opts   Options

	// answered: the validation webhook was seen to answer (kept across
	// terms, as Istio keeps it for the life of the process)
	answered atomic.Bool

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
	if opts.RetryBase <= 0 {
		opts.RetryBase = 100 * time.Millisecond
	}
	if opts.RetryMax <= 0 {
		opts.RetryMax = time.Minute
	}
	return &Patcher{client: client, opts: opts, bundle: opts.CABundle}
}

// kindLimiter retries each kind of configuration as Istio does: its
// validation controller doubles from the base (it waits for its own
// webhook to answer, a few seconds, and would otherwise always end on the
// slow delay); its injection patcher retries fast a few times (conflicts
// between replicas), then slowly.
type kindLimiter struct {
	validating, mutating workqueue.TypedRateLimiter[key]
}

var _ workqueue.TypedRateLimiter[key] = kindLimiter{}

func newKindLimiter(base, max time.Duration) kindLimiter {
	return kindLimiter{
		validating: workqueue.NewTypedItemExponentialFailureRateLimiter[key](base, max),
		mutating:   workqueue.NewTypedItemFastSlowRateLimiter[key](base, max, 5),
	}
}

func (l kindLimiter) of(k key) workqueue.TypedRateLimiter[key] {
	if k.mutating {
		return l.mutating
	}
	return l.validating
}

func (l kindLimiter) When(k key) time.Duration { return l.of(k).When(k) }
func (l kindLimiter) Forget(k key)             { l.of(k).Forget(k) }
func (l kindLimiter) NumRequeues(k key) int    { return l.of(k).NumRequeues(k) }

// start builds and starts a term's informers; they stop with stop.
func (p *Patcher) start(stop <-chan struct{}) (*term, []cache.InformerSynced) {
	t := &term{queue: workqueue.NewTypedRateLimitingQueueWithConfig[key](newKindLimiter(p.opts.RetryBase, p.opts.RetryMax),
		workqueue.TypedRateLimitingQueueConfig[key]{Name: "webhookpatcher"})}
	t.factory = informers.NewSharedInformerFactoryWithOptions(p.client, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.LabelSelector = RevisionLabel + "=" + p.opts.Revision
	}))
	mw := t.factory.Admissionregistration().V1().MutatingWebhookConfigurations().Informer()
	informers := []struct {
		inf      cache.SharedIndexInformer
		mutating bool
	}{{mw, true}}
	synced := []cache.InformerSynced{mw.HasSynced}
	if !p.opts.InjectionOnly {
		vw := t.factory.Admissionregistration().V1().ValidatingWebhookConfigurations().Informer()
		informers = append(informers, struct {
			inf      cache.SharedIndexInformer
			mutating bool
		}{vw, false})
		synced = append(synced, vw.HasSynced)
	}
	for _, w := range informers {
		mutating := w.mutating
		enqueue := func(o any) {
			if d, ok := o.(cache.DeletedFinalStateUnknown); ok {
				o = d.Obj
			}
			if m, ok := o.(metav1.Object); ok {
				t.queue.Add(key{mutating: mutating, name: m.GetName()})
			}
		}
		h := cache.ResourceEventHandlerFuncs{AddFunc: enqueue, UpdateFunc: func(_, o any) { enqueue(o) }}
		if mutating {
			// Istio's patcher hears deletions too (and counts them as
			// webhook_config_not_found)
			h.DeleteFunc = enqueue
		}
		if _, err := w.inf.AddEventHandler(h); err != nil {
			scope.Errorf("webhook configuration informer refused the handler: %v", err)
		}
	}
	t.factory.Start(stop)
	return t, synced
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
	t.enqueueAll(true, "")
	if !p.opts.InjectionOnly {
		t.enqueueAll(false, "")
	}
}

// enqueueAll queues every configuration of one kind but except.
func (t *term) enqueueAll(mutating bool, except string) {
	v1 := t.factory.Admissionregistration().V1()
	inf := v1.ValidatingWebhookConfigurations().Informer()
	if mutating {
		inf = v1.MutatingWebhookConfigurations().Informer()
	}
	for _, o := range inf.GetStore().List() {
		if name := o.(metav1.Object).GetName(); name != except {
			t.queue.Add(key{mutating: mutating, name: name})
		}
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

// errNotAnswering: a validation configuration fails open and the webhook
// has not been seen to answer yet; it is looked at again.
var errNotAnswering = errors.New("the validation webhook has not answered yet: failurePolicy kept")

func (p *Patcher) next(t *term) bool {
	k, quit := t.queue.Get()
	if quit {
		return false
	}
	defer t.queue.Done(k)
	p.mu.Lock()
	bundle := p.bundle
	p.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var err error
	if k.mutating {
		err = p.patchMutating(ctx, t, k.name, bundle)
	} else {
		err = p.reconcileValidating(ctx, t, k.name, bundle)
	}
	switch {
	case err == nil:
		t.queue.Forget(k)
	case errors.Is(err, errNotAnswering):
		scope.Debugf("ValidatingWebhookConfiguration %s: %v (retrying)", k.name, err)
		t.queue.AddRateLimited(k)
	default:
		scope.Warnf("webhook configuration %s: %v (retrying)", k.name, err)
		t.queue.AddRateLimited(k)
	}
	return true
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

// ignoreNotFound: a configuration deleted meanwhile needs nothing.
func ignoreNotFound(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
