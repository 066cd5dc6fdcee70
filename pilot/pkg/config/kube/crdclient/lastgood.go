package crdclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/meshplane/istiod/pilot/pkg/config/kube/crd"
	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/diag"
)

// An update that validation rejects leaves its object's last good version
// serving. Kept in memory only, that version would be a function of the
// replica's history: a replica started after the rejection never saw it,
// serves nothing for the object, and a proxy that reconnects from one
// replica to the other gets other routes. So the versions kept are shared
// through one ConfigMap in istiod's namespace (the last-good record):
//
//   - the leader of its Lease writes it: one entry per rejected object
//     that keeps a version serving, removed once the object is valid again
//     or gone; it is never rewritten when unchanged;
//   - every replica reads it before its first list of any kind, and an
//     object whose current version is rejected serves the record's version
//     when the record holds one for that object (same UID), else its own
//     (until the leader has written it).
//
// An entry is trusted no more than the object it stands for: it applies
// only to an existing object of that UID whose current version is
// rejected, and it is validated again when read.

// LastGoodOptions locate the last-good record. An empty Name keeps last
// good versions in memory only.
type LastGoodOptions struct {
	Namespace, Name string
}

// LastGoodName is the record's ConfigMap name for a revision.
func LastGoodName(revision string) string {
	if revision == "" || revision == "default" {
		return "istiod-last-good-config"
	}
	return "istiod-last-good-config-" + revision
}

// maxRecordBytes bounds the record below the API server's limit on an
// object (1 MiB with metadata); entries beyond it stay in memory only.
const maxRecordBytes = 900 << 10

// recordEntry is one kept version, as the record stores it.
type recordEntry struct {
	UID    string         `json:"uid"`
	Object *crd.IstioKind `json:"object"`
}

type lastGood struct {
	cl   *Client
	opts LastGoodOptions
	kick chan struct{}

	mu sync.Mutex
	// entries: kind → key → kept version, decoded and validated
	entries map[config.GroupVersionKind]map[string]config.Config
	data    map[string]string // the record as last read (nil: absent)
	exists  bool
	synced  func() bool
}

func newLastGood(cl *Client, opts LastGoodOptions) *lastGood {
	if opts.Name == "" || opts.Namespace == "" {
		return nil
	}
	return &lastGood{cl: cl, opts: opts, kick: make(chan struct{}, 1), synced: func() bool { return false }}
}

// dataKey names an entry: Kind_group_namespace_name (names hold no "_").
func dataKey(g config.GroupVersionKind, key string) string {
	ns, name := "", key
	if i := strings.IndexByte(key, '/'); i >= 0 {
		ns, name = key[:i], key[i+1:]
	}
	return g.Kind + "_" + g.Group + "_" + ns + "_" + name
}

// lookup returns the record's version of the object key of kind g with
// the given UID.
func (lg *lastGood) lookup(g config.GroupVersionKind, key, uid string) (config.Config, bool) {
	if lg == nil {
		return config.Config{}, false
	}
	lg.mu.Lock()
	defer lg.mu.Unlock()
	c, ok := lg.entries[g][key]
	if !ok || c.UID != uid || uid == "" {
		return config.Config{}, false
	}
	return c, true
}

// changed asks the writer to reconcile the record.
func (lg *lastGood) changed() {
	if lg == nil {
		return
	}
	select {
	case lg.kick <- struct{}{}:
	default:
	}
}

// start watches the record and waits (a few seconds at most: a replica
// that cannot read it keeps its versions in memory) until it is read.
func (lg *lastGood) start(stop <-chan struct{}) {
	cms := lg.cl.client.Kube().CoreV1().ConfigMaps(lg.opts.Namespace)
	sel := fields.OneTermEqualSelector("metadata.name", lg.opts.Name).String()
	lw := &cache.ListWatch{
		ListFunc: func(o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = sel
			return cms.List(context.Background(), o)
		},
		WatchFunc: func(o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = sel
			return cms.Watch(context.Background(), o)
		},
	}
	inf := cache.NewSharedIndexInformer(lw, &corev1.ConfigMap{}, 0, cache.Indexers{})
	reg, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { lg.read(o) },
		UpdateFunc: func(_, o any) { lg.read(o) },
		DeleteFunc: func(any) { lg.read(nil) },
	})
	if err != nil {
		scope.Errorf("last-good record: %v", err)
		return
	}
	lg.mu.Lock()
	lg.synced = reg.HasSynced
	lg.mu.Unlock()
	go inf.Run(stop)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	go func() {
		select {
		case <-stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	if !cache.WaitForCacheSync(ctx.Done(), reg.HasSynced) {
		scope.Warnf("last-good record ConfigMap %s/%s not read within 5s: last good versions are kept in memory until it is",
			lg.opts.Namespace, lg.opts.Name)
	}
}

// read decodes the record (nil: deleted) and applies it to the objects
// rejected now.
func (lg *lastGood) read(o any) {
	cm, _ := o.(*corev1.ConfigMap)
	if cm != nil && cm.Name != lg.opts.Name {
		return
	}
	entries := map[config.GroupVersionKind]map[string]config.Config{}
	var data map[string]string
	var problems []diag.Problem
	if cm != nil {
		data = cm.Data
		for dk, v := range cm.Data {
			cfg, err := lg.decode(v)
			if err != nil {
				problems = append(problems, diag.Problem{Severity: diag.Warning, Field: "data." + dk,
					Message: "last-good record entry ignored: " + err.Error()})
				continue
			}
			if entries[cfg.GroupVersionKind] == nil {
				entries[cfg.GroupVersionKind] = map[string]config.Config{}
			}
			entries[cfg.GroupVersionKind][configKey(cfg)] = cfg
		}
	}
	if b := lg.cl.opts.Problems; b != nil {
		b.Report(problemSource, "ConfigMap "+lg.opts.Namespace+"/"+lg.opts.Name, problems)
	}
	lg.mu.Lock()
	lg.entries, lg.data, lg.exists = entries, data, cm != nil
	lg.mu.Unlock()
	for _, k := range lg.cl.kinds {
		k.applyRecord()
	}
	lg.changed()
}

func (lg *lastGood) decode(v string) (config.Config, error) {
	var e recordEntry
	if err := json.Unmarshal([]byte(v), &e); err != nil {
		return config.Config{}, err
	}
	if e.Object == nil {
		return config.Config{}, errors.New("no object")
	}
	k, ok := lg.cl.kinds[e.Object.GroupVersionKind()]
	if !ok {
		return config.Config{}, fmt.Errorf("kind %s is not watched", e.Object.GroupVersionKind())
	}
	cfg, err := crd.ConvertObject(k.schema, e.Object, lg.cl.opts.DomainSuffix)
	if err != nil {
		return config.Config{}, err
	}
	cfg.UID = e.UID
	if _, err := k.schema.ValidateConfig(*cfg); err != nil {
		return config.Config{}, err
	}
	return *cfg, nil
}

// applyRecord serves the record's version of each object of the kind that
// is rejected now and has one.
func (k *kindState) applyRecord() {
	k.events.Lock()
	defer k.events.Unlock()
	k.mu.Lock()
	uids := maps.Clone(k.rejectedUID)
	k.mu.Unlock()
	for key, uid := range uids {
		k.serveRecorded(key, uid)
	}
}

// serveRecorded serves the record's version of a rejected object, if it
// has one, and reports whether it did.
func (k *kindState) serveRecorded(key, uid string) bool {
	rec, ok := k.cl.lastGood.lookup(k.schema.GroupVersionKind(), key, uid)
	if !ok {
		return false
	}
	if cur := k.collection.GetKey(key); cur == nil || cur.ResourceVersion != rec.ResourceVersion {
		k.collection.Set(rec)
	}
	return true
}

// RunLastGoodWriter keeps the last-good record equal to the versions kept
// serving, until stop closes. Only the leader of the record's Lease runs it.
func (cl *Client) RunLastGoodWriter(stop <-chan struct{}) {
	lg := cl.lastGood
	if lg == nil {
		return
	}
	tick := time.NewTicker(30 * time.Second)
	defer tick.Stop()
	lastErr, backoff := "", time.Second
	for {
		if err := lg.reconcile(); err != nil {
			// retried with a growing pause, said once per distinct error
			if err.Error() != lastErr {
				scope.Warnf("last-good record ConfigMap %s/%s: %v (retrying)", lg.opts.Namespace, lg.opts.Name, err)
				lastErr = err.Error()
			}
			select {
			case <-stop:
				return
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, 30*time.Second)
			continue
		}
		lastErr, backoff = "", time.Second
		select {
		case <-stop:
			return
		case <-lg.kick:
		case <-tick.C:
		}
		// let a burst of rejections settle into one write
		select {
		case <-stop:
			return
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// desired is the record the kept versions make.
func (lg *lastGood) desired() map[string]string {
	out := map[string]string{}
	size := 0
	type entry struct{ key, value string }
	var all []entry
	for g, k := range lg.cl.kinds {
		k.mu.Lock()
		keys := make([]string, 0, len(k.rejectedUID))
		for key := range k.rejectedUID {
			keys = append(keys, key)
		}
		k.mu.Unlock()
		for _, key := range keys {
			cur := k.collection.GetKey(key)
			if cur == nil {
				continue
			}
			ik, err := crd.ConvertConfig(*cur)
			if err != nil {
				continue
			}
			ik.UID = ""
			b, err := json.Marshal(recordEntry{UID: cur.UID, Object: ik})
			if err != nil {
				continue
			}
			all = append(all, entry{dataKey(g, key), string(b)})
		}
	}
	sort.Slice(all, func(i, j int) bool { return all[i].key < all[j].key })
	for _, e := range all {
		if size+len(e.key)+len(e.value) > maxRecordBytes {
			scope.Warnf("last-good record: %s left out (the record is full); it is kept in memory only", e.key)
			continue
		}
		size += len(e.key) + len(e.value)
		out[e.key] = e.value
	}
	return out
}

// reconcile writes the record when it differs from the kept versions.
func (lg *lastGood) reconcile() error {
	lg.mu.Lock()
	synced := lg.synced()
	cur, exists := lg.data, lg.exists
	lg.mu.Unlock()
	if !synced {
		return nil
	}
	want := lg.desired()
	if maps.Equal(cur, want) && (exists || len(want) == 0) {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cms := lg.cl.client.Kube().CoreV1().ConfigMaps(lg.opts.Namespace)
	cm, err := cms.Get(ctx, lg.opts.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		if len(want) == 0 {
			return nil
		}
		_, err = cms.Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: lg.opts.Name, Namespace: lg.opts.Namespace,
				Labels: map[string]string{"app": "istiod"}},
			Data: want,
		}, metav1.CreateOptions{})
		return err
	case err != nil:
		return err
	case maps.Equal(cm.Data, want):
		return nil
	}
	cm = cm.DeepCopy()
	cm.Data = want
	_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
	return err
}
