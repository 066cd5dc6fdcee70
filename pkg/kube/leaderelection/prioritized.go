package leaderelection

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// RecordAnnotation holds the election record on a ConfigMap lock, as
// client-go's (and Istio's) ConfigMap lock keeps it.
const RecordAnnotation = "control-plane.alpha.kubernetes.io/leader"

// remotePrefix marks the key of a candidate that runs outside the cluster
// (Istio's "^").
const remotePrefix = "^"

// Record is the election record in RecordAnnotation, in Istio's JSON shape
// (client-go's record plus the holder's key).
type Record struct {
	HolderIdentity       string      `json:"holderIdentity"`
	HolderKey            string      `json:"holderKey"`
	LeaseDurationSeconds int         `json:"leaseDurationSeconds"`
	AcquireTime          metav1.Time `json:"acquireTime"`
	RenewTime            metav1.Time `json:"renewTime"`
	LeaderTransitions    int         `json:"leaderTransitions"`
}

// PrioritizedOptions configure a Prioritized election.
type PrioritizedOptions struct {
	// Namespace and Name are the ConfigMap lock's.
	Namespace, Name string
	// Identity is the candidate's (the pod name).
	Identity string
	// Revision is istiod's ("" is "default").
	Revision string
	// Remote: the candidate runs outside the cluster of the lock (an
	// external istiod writing in a remote cluster).
	Remote bool
	// DefaultRevision returns the cluster's default revision ("": none
	// known); nil: the default-revision rule never applies.
	DefaultRevision func() string
	// Timing: zero values take Istio's (30 s, 15 s, 7.5 s).
	Timing Timing
}

// Prioritized is Istio's election of its cluster-wide controllers (the
// namespace controller, also for an external istiod in a remote cluster):
// a ConfigMap lock whose record carries the holder's key, its revision
// prefixed with "^" when it runs outside the cluster. A candidate takes
// the lock from a live holder when it ranks higher: it is of the
// cluster's default revision and the holder is not, or it is of the
// holder's revision, local, and the holder remote. Otherwise it waits for
// the record to go stale, as client-go's elections do.
type Prioritized struct {
	client kubernetes.Interface
	opts   PrioritizedOptions
	key    string
	rev    string
	now    func() time.Time

	mu      sync.Mutex
	runs    []func(stop <-chan struct{})
	leading bool

	// the candidate's view of the record, touched by Run's goroutine only
	observed     Record
	observedRaw  string
	observedTime time.Time
	cm           *corev1.ConfigMap
}

// NewPrioritized builds a prioritized election; add functions, then Run.
func NewPrioritized(client kubernetes.Interface, opts PrioritizedOptions) *Prioritized {
	if opts.Timing.LeaseDuration == 0 {
		opts.Timing.LeaseDuration = 30 * time.Second
	}
	if opts.Timing.RenewDeadline == 0 {
		opts.Timing.RenewDeadline = opts.Timing.LeaseDuration / 2
	}
	if opts.Timing.RetryPeriod == 0 {
		opts.Timing.RetryPeriod = opts.Timing.LeaseDuration / 4
	}
	rev := opts.Revision
	if rev == "" {
		rev = "default"
	}
	key := rev
	if opts.Remote {
		key = remotePrefix + rev
	}
	return &Prioritized{client: client, opts: opts, key: key, rev: rev, now: time.Now}
}

// AddRunFunction adds a function run each time the candidate leads; its
// stop channel closes when leadership is lost or Run stops. Call before
// Run.
func (p *Prioritized) AddRunFunction(f func(stop <-chan struct{})) {
	p.mu.Lock()
	p.runs = append(p.runs, f)
	p.mu.Unlock()
}

// IsLeader reports whether the candidate leads now (always, when the
// election is disabled, as in Istio).
func (p *Prioritized) IsLeader() bool {
	if p.opts.Timing.Disabled {
		return true
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.leading
}

// Steals reports whether a candidate of this election takes the lock from
// a live holder of key holderKey.
func (p *Prioritized) Steals(holderKey string) bool {
	holderRemote := strings.HasPrefix(holderKey, remotePrefix)
	holderRev := strings.TrimPrefix(holderKey, remotePrefix)
	if p.opts.DefaultRevision != nil {
		if def := p.opts.DefaultRevision(); def != "" && def == p.rev && holderRev != p.rev {
			return true
		}
	}
	return p.rev == holderRev && !p.opts.Remote && holderRemote
}

// Run contends until stop closes, running the functions each time it
// leads (and waiting for them to return before it contends again); it
// releases the lock on stop. Disabled (Timing.Disabled), it runs them at
// once until stop and never reads or writes the lock.
func (p *Prioritized) Run(stop <-chan struct{}) {
	if p.opts.Timing.Disabled {
		p.mu.Lock()
		runs := slices.Clone(p.runs)
		p.mu.Unlock()
		bypass(p.opts.Name, runs, stop)
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	for ctx.Err() == nil {
		if !p.acquire(ctx) {
			break
		}
		p.lead(ctx)
	}
	p.release()
}

// acquire tries every retry period until it holds the lock (true) or ctx
// ends (false).
func (p *Prioritized) acquire(ctx context.Context) bool {
	for {
		if p.tryAcquireOrRenew(ctx) {
			return true
		}
		if !sleep(ctx, jitter(p.opts.Timing.RetryPeriod)) {
			return false
		}
	}
}

// lead runs the functions while the lock is renewed; it returns once
// leadership is lost (no renewal for the renew deadline) or ctx ends, and
// the functions returned.
func (p *Prioritized) lead(ctx context.Context) {
	leaderCtx, cancel := context.WithCancel(ctx)
	p.setLeading(true)
	scope.Infof("%s: %s is the leader (key %s)", p.opts.Name, p.opts.Identity, p.key)
	p.mu.Lock()
	runs := append([]func(<-chan struct{}){}, p.runs...)
	p.mu.Unlock()
	var wg sync.WaitGroup
	for _, f := range runs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f(leaderCtx.Done())
		}()
	}
	last := p.now()
	for sleep(ctx, p.opts.Timing.RetryPeriod) {
		if p.tryAcquireOrRenew(ctx) {
			last = p.now()
			continue
		}
		if p.now().Sub(last) >= p.opts.Timing.RenewDeadline {
			break
		}
	}
	cancel()
	wg.Wait()
	p.setLeading(false)
	scope.Infof("%s: %s stopped leading", p.opts.Name, p.opts.Identity)
}

func (p *Prioritized) setLeading(v bool) {
	p.mu.Lock()
	p.leading = v
	p.mu.Unlock()
}

func (p *Prioritized) holds() bool { return p.observed.HolderIdentity == p.opts.Identity }

// tryAcquireOrRenew creates, renews or takes the lock; true when it holds
// it after the call.
func (p *Prioritized) tryAcquireOrRenew(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(ctx, p.opts.Timing.RenewDeadline)
	defer cancel()
	now := p.now()
	want := Record{HolderIdentity: p.opts.Identity, HolderKey: p.key,
		LeaseDurationSeconds: int(p.opts.Timing.LeaseDuration / time.Second),
		AcquireTime:          metav1.NewTime(now), RenewTime: metav1.NewTime(now)}
	api := p.client.CoreV1().ConfigMaps(p.opts.Namespace)
	cm, err := api.Get(ctx, p.opts.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		raw, _ := json.Marshal(want)
		created, err := api.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: p.opts.Name, Namespace: p.opts.Namespace,
			Annotations: map[string]string{RecordAnnotation: string(raw)}}}, metav1.CreateOptions{})
		if err != nil {
			scope.Debugf("%s: creating the lock: %v", p.opts.Name, err)
			return false
		}
		p.cm, p.observed, p.observedTime = created, want, now
		return true
	}
	if err != nil {
		scope.Debugf("%s: reading the lock: %v", p.opts.Name, err)
		return false
	}
	var old Record
	raw, found := cm.Annotations[RecordAnnotation]
	if found {
		if err := json.Unmarshal([]byte(raw), &old); err != nil {
			scope.Warnf("%s: unreadable election record: %v", p.opts.Name, err)
			return false
		}
	}
	if raw != p.observedRaw {
		p.observed, p.observedRaw, p.observedTime = old, raw, now
	}
	if old.HolderIdentity != "" && p.observedTime.Add(p.opts.Timing.LeaseDuration).After(now) && !p.holds() {
		if !p.Steals(old.HolderKey) {
			return false
		}
		scope.Infof("%s: taking the lock from %s (key %s)", p.opts.Name, old.HolderIdentity, old.HolderKey)
	}
	if p.holds() {
		want.AcquireTime, want.LeaderTransitions = old.AcquireTime, old.LeaderTransitions
	} else {
		want.LeaderTransitions = old.LeaderTransitions + 1
	}
	if !p.write(ctx, cm, want) {
		return false
	}
	p.observed, p.observedTime = want, now
	return true
}

// write stores rec on cm (the version just read).
func (p *Prioritized) write(ctx context.Context, cm *corev1.ConfigMap, rec Record) bool {
	raw, _ := json.Marshal(rec)
	upd := cm.DeepCopy()
	if upd.Annotations == nil {
		upd.Annotations = map[string]string{}
	}
	upd.Annotations[RecordAnnotation] = string(raw)
	got, err := p.client.CoreV1().ConfigMaps(p.opts.Namespace).Update(ctx, upd, metav1.UpdateOptions{})
	if err != nil {
		scope.Debugf("%s: writing the lock: %v", p.opts.Name, err)
		return false
	}
	p.cm = got
	return true
}

// release empties the holder of a lock this candidate holds, so another
// takes it at once (Istio's ReleaseOnCancel).
func (p *Prioritized) release() {
	if !p.holds() || p.cm == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), p.opts.Timing.RenewDeadline)
	defer cancel()
	now := metav1.NewTime(p.now())
	cm, err := p.client.CoreV1().ConfigMaps(p.opts.Namespace).Get(ctx, p.opts.Name, metav1.GetOptions{})
	if err != nil {
		return
	}
	var cur Record
	_ = json.Unmarshal([]byte(cm.Annotations[RecordAnnotation]), &cur)
	if cur.HolderIdentity != p.opts.Identity {
		return // taken meanwhile
	}
	if p.write(ctx, cm, Record{LeaderTransitions: cur.LeaderTransitions, LeaseDurationSeconds: 1, AcquireTime: now, RenewTime: now}) {
		p.observed = Record{}
	}
}

// sleep waits d unless ctx ends first (false).
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// jitter is d plus up to 120% of it, as client-go's elections wait
// between attempts.
func jitter(d time.Duration) time.Duration {
	return d + time.Duration(rand.Float64()*1.2*float64(d))
}
