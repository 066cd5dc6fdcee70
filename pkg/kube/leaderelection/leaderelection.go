package leaderelection

import (
	"context"
	"slices"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/meshplane/istiod/pkg/log"
)

var scope = log.RegisterScope("leader", "leader election")

// Istio's lock names.
const (
	// NamespaceController guards the istio-ca-root-cert ConfigMaps.
	NamespaceController = "istio-namespace-controller-election"
	// GatewayStatusController guards the status of Gateway API objects and
	// the builtin GatewayClasses; it is per revision (PerRevision).
	GatewayStatusController = "istio-gateway-status-leader"
	// GatewayDeploymentController guards the Deployments, Services and
	// ServiceAccounts generated for Gateways; it is per revision.
	GatewayDeploymentController = "istio-gateway-deployment"
	// LastGoodRecord guards the record of last good config versions
	// (ours: Istio keeps no such record); it is per revision.
	LastGoodRecord = "istiod-last-good-config"
)

// PerRevision is the name of a per-revision lock, as Istio names it:
// <name>-<revision>, "default" for the default revision.
func PerRevision(name, revision string) string {
	if revision == "" {
		revision = "default"
	}
	return name + "-" + revision
}

// Timing is how the Lease is held; the zero value takes Istio's (30 s
// lease, 15 s renew deadline, 5 s retry).
type Timing struct {
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	// Disabled is ENABLE_LEADER_ELECTION=false: no lock is read or
	// written, and the functions run from Run until stop as if this
	// replica always led (Istio's bypass, for a single replica).
	Disabled bool
}

func (t Timing) withDefaults() Timing {
	if t.LeaseDuration == 0 {
		t.LeaseDuration = 30 * time.Second
	}
	if t.RenewDeadline == 0 {
		t.RenewDeadline = 15 * time.Second
	}
	if t.RetryPeriod == 0 {
		t.RetryPeriod = 5 * time.Second
	}
	return t
}

// Election contends for one Lease and runs its functions while it leads.
type Election struct {
	client    kubernetes.Interface
	namespace string
	name      string
	identity  string
	timing    Timing

	mu      sync.Mutex
	runs    []func(stop <-chan struct{})
	leading bool
}

// New contends for Lease name in namespace as identity (the pod name).
func New(client kubernetes.Interface, namespace, name, identity string, timing Timing) *Election {
	return &Election{client: client, namespace: namespace, name: name, identity: identity, timing: timing.withDefaults()}
}

// AddRunFunction adds a function run each time this replica becomes the
// leader; its stop channel closes when leadership is lost or Run stops.
// Call before Run.
func (e *Election) AddRunFunction(f func(stop <-chan struct{})) {
	e.mu.Lock()
	e.runs = append(e.runs, f)
	e.mu.Unlock()
}

// IsLeader reports whether this replica leads now (always, when the
// election is disabled, as in Istio).
func (e *Election) IsLeader() bool {
	if e.timing.Disabled {
		return true
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.leading
}

// Run contends until stop closes, running the functions each time it
// leads; it releases the Lease on stop. Disabled, it runs them at once
// until stop, without a Lease.
func (e *Election) Run(stop <-chan struct{}) {
	if e.timing.Disabled {
		e.mu.Lock()
		runs := slices.Clone(e.runs)
		e.mu.Unlock()
		bypass(e.name, runs, stop)
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-stop
		cancel()
	}()
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: e.namespace, Name: e.name},
		Client:     e.client.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: e.identity},
	}
	for ctx.Err() == nil {
		le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
			Lock:            lock,
			LeaseDuration:   e.timing.LeaseDuration,
			RenewDeadline:   e.timing.RenewDeadline,
			RetryPeriod:     e.timing.RetryPeriod,
			ReleaseOnCancel: true,
			Name:            e.name,
			Callbacks: leaderelection.LeaderCallbacks{
				OnStartedLeading: e.lead,
				OnStoppedLeading: func() {
					e.setLeading(false)
					scope.Infof("%s: %s stopped leading", e.name, e.identity)
				},
			},
		})
		if err != nil {
			scope.Errorf("%s: %v", e.name, err)
			return
		}
		// Run returns when leadership is lost; contend again until stopped
		le.Run(ctx)
	}
}

func (e *Election) setLeading(v bool) {
	e.mu.Lock()
	e.leading = v
	e.mu.Unlock()
}

// bypass runs every function until stop closes and waits for them to
// return: the election is disabled, the replica leads for good.
func bypass(name string, runs []func(<-chan struct{}), stop <-chan struct{}) {
	scope.Infof("%s: leader election disabled (ENABLE_LEADER_ELECTION=false): running as the leader", name)
	var wg sync.WaitGroup
	for _, f := range runs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f(stop)
		}()
	}
	<-stop
	wg.Wait()
}

// lead runs every function until ctx ends (leadership lost or stopped).
func (e *Election) lead(ctx context.Context) {
	e.setLeading(true)
	scope.Infof("%s: %s is the leader", e.name, e.identity)
	e.mu.Lock()
	runs := append([]func(<-chan struct{}){}, e.runs...)
	e.mu.Unlock()
	var wg sync.WaitGroup
	for _, f := range runs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f(ctx.Done())
		}()
	}
	wg.Wait()
}
