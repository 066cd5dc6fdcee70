package statuswriter

import (
	"errors"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"
	istiometa "istio.io/api/meta/v1alpha1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/workqueue"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayv1alpha2 "sigs.k8s.io/gateway-api/apis/v1alpha2"

	"github.com/meshplane/istiod/pilot/pkg/config/kube/gateway"
	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/config/schema/gvk"
	"github.com/meshplane/istiod/pkg/kube/krt"
	"github.com/meshplane/istiod/pkg/log"
	"github.com/meshplane/istiod/pkg/monitoring"
)

var scope = log.RegisterScope("gatewaystatus", "Gateway API status writer")

// statusWrites counts status writes by kind and result (ok, error).
var statusWrites = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "istiod_gateway_status_writes_total",
	Help: "Gateway API status writes by the leader, by kind and result (ok, error).",
}, []string{"kind", "result"})

func init() { monitoring.MustRegister(statusWrites) }

// Options configure a Writer.
type Options struct {
	// Store holds the Gateway API objects: it is read for their current
	// status and written to (UpdateStatus, and Create for GatewayClasses).
	Store model.ConfigStore
	// Statuses are the statuses to write (gateway.Source.Statuses).
	Statuses krt.Collection[gateway.ObjectStatus]
	// Classes are the store's GatewayClasses, watched to recreate a
	// builtin class that is deleted.
	Classes krt.Collection[config.Config]
	// Now stamps new conditions (default time.Now).
	Now func() time.Time
	// CreateClasses creates the builtin GatewayClasses when missing
	// (istio-waypoint too when Ambient is set).
	CreateClasses bool
	Ambient       bool
	// NoRemoteClass: istio-remote is not created
	// (PILOT_MULTI_NETWORK_DISCOVER_GATEWAY_API=false)
	NoRemoteClass bool
	// ClassesServed closes once the API server serves GatewayClasses (their
	// CRD is established and the store has read them); until then no class
	// is created. Nil: they are served from the start (e.g. an in-memory
	// store).
	ClassesServed <-chan struct{}
}

// Writer writes statuses while it runs.
type Writer struct {
	opts Options
}

// New returns a writer; Run writes.
func New(opts Options) *Writer {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Writer{opts: opts}
}

// task is a queue entry: the status of the object of Statuses with key
// status, or, with classes set, a check of the builtin classes.
type task struct {
	classes bool
	status  string
}

// classesTask (re)checks the builtin classes.
var classesTask = task{classes: true}

// String names the task in logs.
func (t task) String() string {
	if t.classes {
		return "builtin GatewayClasses"
	}
	return "status of " + t.status
}

// Run writes until stop closes: every status that differs from its
// object's, then every change. It may run again later (a new leadership
// term), never twice at once.
func (w *Writer) Run(stop <-chan struct{}) {
	// statuses computed before every input is known could be wrong
	if !w.opts.Statuses.WaitUntilSynced(stop) {
		return
	}
	q := workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[task](),
		workqueue.TypedRateLimitingQueueConfig[task]{Name: "gateway-status"})
	defer q.ShutDown()
	regs := []krt.HandlerRegistration{w.opts.Statuses.RegisterBatch(func(events []krt.Event[gateway.ObjectStatus]) {
		for _, e := range events {
			if e.New != nil {
				q.Add(task{status: e.New.ResourceName()})
			}
		}
	}, true)}
	defer func() {
		for _, r := range regs {
			r.UnregisterHandler()
		}
	}()
	// the class watch ends with this term
	var wg sync.WaitGroup
	done := make(chan struct{})
	defer func() {
		close(done)
		wg.Wait()
	}()
	if w.opts.CreateClasses {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.watchClasses(q, stop, done)
		}()
	}
	go func() {
		<-stop
		q.ShutDown()
	}()
	scope.Infof("writing Gateway API status")
	for w.next(q) {
	}
	scope.Infof("stopped writing Gateway API status")
}

// watchClasses queues the check of the builtin classes once GatewayClasses
// are served, and again whenever one is deleted, until stop or done (the
// end of Run) closes.
func (w *Writer) watchClasses(q workqueue.TypedRateLimitingInterface[task], stop, done <-chan struct{}) {
	if w.opts.ClassesServed != nil {
		select {
		case <-w.opts.ClassesServed:
		case <-stop:
			return
		case <-done:
			return
		}
	}
	q.Add(classesTask)
	if w.opts.Classes == nil {
		return
	}
	reg := w.opts.Classes.Register(func(e krt.Event[config.Config]) {
		if e.Event == krt.EventDelete {
			q.Add(classesTask)
		}
	})
	defer reg.UnregisterHandler()
	select {
	case <-stop:
	case <-done:
	}
}

func (w *Writer) next(q workqueue.TypedRateLimitingInterface[task]) bool {
	t, quit := q.Get()
	if quit {
		return false
	}
	defer q.Done(t)
	var err error
	if t.classes {
		err = w.createClasses()
	} else {
		err = w.write(t.status)
	}
	if err != nil {
		scope.Warnf("%v: %v (retrying)", t, err)
		q.AddRateLimited(t)
		return true
	}
	q.Forget(t)
	return true
}

// createClasses creates every builtin GatewayClass that does not exist.
func (w *Writer) createClasses() error {
	for _, c := range gateway.BuiltinsFor(w.opts.Ambient, !w.opts.NoRemoteClass) {
		if w.opts.Store.Get(gvk.GatewayClass, c.Name, "") != nil {
			continue
		}
		if _, err := w.opts.Store.Create(gateway.NewClassObject(c)); err != nil &&
			!apierrors.IsAlreadyExists(err) && !errors.Is(err, model.ErrAlreadyExists) {
			return err
		}
		scope.Infof("created GatewayClass %s", c.Name)
	}
	return nil
}

// write sends one status when it differs from the object's.
func (w *Writer) write(key string) error {
	desired := w.opts.Statuses.GetKey(key)
	if desired == nil {
		return nil
	}
	cur := w.opts.Store.Get(desired.Kind, desired.Name, desired.Namespace)
	if cur == nil || cur.Generation != desired.Generation {
		// gone, or changed since: its new status is on its way
		return nil
	}
	if Equal(cur.Status, desired.Status) {
		return nil
	}
	next := config.Config{Meta: cur.Meta, Spec: cur.Spec, Status: Stamp(desired.Status, metav1.NewTime(w.opts.Now()))}
	if _, err := w.opts.Store.UpdateStatus(next); err != nil {
		if apierrors.IsNotFound(err) || errors.Is(err, model.ErrNotFound) {
			return nil
		}
		statusWrites.WithLabelValues(desired.Kind.Kind, "error").Inc()
		return err
	}
	statusWrites.WithLabelValues(desired.Kind.Kind, "ok").Inc()
	return nil
}

// Equal compares two statuses semantically (nil and empty are equal).
func Equal(a, b any) bool {
	if isEmpty(a) && isEmpty(b) {
		return true
	}
	if pa, ok := a.(proto.Message); ok {
		pb, ok := b.(proto.Message)
		return ok && proto.Equal(pa, pb)
	}
	return equality.Semantic.DeepEqual(a, b)
}

func isEmpty(s any) bool {
	switch st := s.(type) {
	case nil:
		return true
	case *gatewayv1.GatewayClassStatus:
		return st == nil || len(st.Conditions) == 0
	case *gatewayv1.GatewayStatus:
		return st == nil || (len(st.Conditions) == 0 && len(st.Listeners) == 0 && len(st.Addresses) == 0)
	case *gatewayv1.HTTPRouteStatus:
		return st == nil || len(st.Parents) == 0
	case *gatewayv1.GRPCRouteStatus:
		return st == nil || len(st.Parents) == 0
	case *gatewayv1alpha2.TCPRouteStatus:
		return st == nil || len(st.Parents) == 0
	case *gatewayv1.TLSRouteStatus:
		return st == nil || len(st.Parents) == 0
	case *istiometa.IstioStatus:
		return st == nil || (len(st.Conditions) == 0 && len(st.ValidationMessages) == 0 && st.ObservedGeneration == 0)
	}
	return false
}

// Stamp returns a copy of status whose conditions without a
// lastTransitionTime have now.
func Stamp(status any, now metav1.Time) any {
	stamp := func(cs []metav1.Condition) {
		for i := range cs {
			if cs[i].LastTransitionTime.IsZero() {
				cs[i].LastTransitionTime = now
			}
		}
	}
	stampParents := func(ps []gatewayv1.RouteParentStatus) {
		for i := range ps {
			stamp(ps[i].Conditions)
		}
	}
	switch st := status.(type) {
	case *gatewayv1.GatewayClassStatus:
		c := st.DeepCopy()
		stamp(c.Conditions)
		return c
	case *gatewayv1.GatewayStatus:
		c := st.DeepCopy()
		stamp(c.Conditions)
		for i := range c.Listeners {
			stamp(c.Listeners[i].Conditions)
		}
		return c
	case *gatewayv1.HTTPRouteStatus:
		c := st.DeepCopy()
		stampParents(c.Parents)
		return c
	case *gatewayv1.GRPCRouteStatus:
		c := st.DeepCopy()
		stampParents(c.Parents)
		return c
	case *gatewayv1alpha2.TCPRouteStatus:
		c := st.DeepCopy()
		stampParents(c.Parents)
		return c
	case *gatewayv1.TLSRouteStatus:
		c := st.DeepCopy()
		stampParents(c.Parents)
		return c
	case *istiometa.IstioStatus:
		c := proto.Clone(st).(*istiometa.IstioStatus)
		for _, cond := range c.Conditions {
			if cond.LastTransitionTime == nil {
				cond.LastTransitionTime = timestamppb.New(now.Time)
			}
		}
		return c
	}
	return status
}
