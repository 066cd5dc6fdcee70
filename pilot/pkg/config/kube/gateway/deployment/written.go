package deployment

import (
	"strconv"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"
)

// objectCache is an informer's store of one kind, overlaid with the
// objects this term wrote until the informer has caught up with them: a
// reconcile that follows a write closely compares with what was written,
// not with the version before it (which would look out of date and cost a
// needless write). Safe for concurrent use.
type objectCache struct {
	store cache.Store

	mu      sync.Mutex
	written map[string]runtime.Object // namespace/name → the API server's answer to the write
}

func newObjectCache(store cache.Store) *objectCache {
	return &objectCache{store: store, written: map[string]runtime.Object{}}
}

// wrote records the object an apply returned.
func (c *objectCache) wrote(obj runtime.Object) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return
	}
	c.mu.Lock()
	c.written[m.GetNamespace()+"/"+m.GetName()] = obj
	c.mu.Unlock()
}

// get returns the newer of the informer's object and the one written
// (nil when the informer has none: it may have been deleted since).
func (c *objectCache) get(key string) runtime.Object {
	o, ok, err := c.store.GetByKey(key)
	if err != nil || !ok {
		c.forget(key)
		return nil
	}
	cached, isObj := o.(runtime.Object)
	if !isObj {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	w, ok := c.written[key]
	if !ok {
		return cached
	}
	if resourceVersionOf(w) > resourceVersionOf(cached) {
		return w
	}
	delete(c.written, key) // the informer caught up
	return cached
}

func (c *objectCache) forget(key string) {
	c.mu.Lock()
	delete(c.written, key)
	c.mu.Unlock()
}

// resourceVersionOf reads a resourceVersion as the integer the API server's etcd
// storage makes it (0 when it is not one: the informer's object wins).
func resourceVersionOf(o runtime.Object) uint64 {
	m, err := meta.Accessor(o)
	if err != nil {
		return 0
	}
	v, err := strconv.ParseUint(m.GetResourceVersion(), 10, 64)
	if err != nil {
		return 0
	}
	return v
}
