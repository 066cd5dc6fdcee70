package multicluster

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// kubeconfigDir is PILOT_MULTICLUSTER_KUBECONFIG_PATH, Istio's file
// source of remote clusters (it replaces the remote secrets): every
// regular, non-empty *.yaml or *.yml file under the directory, walked
// recursively, is one cluster's kubeconfig, its cluster ID the cluster
// name of its current context (else of the first context, by name, that
// names one; else the first cluster name). A cluster's key is "/<ID>", as
// Istio names it. The tree is read again 250 ms after a change; a read
// with a file that does not parse changes nothing. Two files of one
// cluster ID with different contents are a conflict: the cluster keeps
// what it had. If the first read fails, no cluster is read from files
// until istiod restarts (as in Istio).
type kubeconfigDir struct {
	root    string
	enqueue func(key string)

	mu     sync.Mutex
	byID   map[string][][]byte // kubeconfigs naming each cluster ID, distinct
	synced bool
}

func newKubeconfigDir(root string, enqueue func(string)) *kubeconfigDir {
	return &kubeconfigDir{root: root, enqueue: enqueue, byID: map[string][][]byte{}}
}

func (d *kubeconfigDir) hasSynced() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.synced
}

// keys are those of the clusters read.
func (d *kubeconfigDir) keys() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]string, 0, len(d.byID))
	for id := range d.byID {
		out = append(out, "/"+id)
	}
	sort.Strings(out)
	return out
}

// get is the data of key, as a secret's (nil: no such cluster), or the
// conflict that keeps the cluster as it is.
func (d *kubeconfigDir) get(key string) (map[string][]byte, error) {
	id := key[1:]
	d.mu.Lock()
	defer d.mu.Unlock()
	kcs := d.byID[id]
	switch len(kcs) {
	case 0:
		return nil, nil
	case 1:
		return map[string][]byte{id: kcs[0]}, nil
	}
	var sums []string
	for _, kc := range kcs {
		sums = append(sums, fmt.Sprintf("%x", sha256.Sum256(kc)))
	}
	sort.Strings(sums)
	return nil, fmt.Errorf("multiple file-backed kubeconfigs found for cluster %q with hashes %v", id, sums)
}

// run reads the tree and follows it until stop.
func (d *kubeconfigDir) run(stop <-chan struct{}) {
	err := d.read()
	d.mu.Lock()
	d.synced = true
	d.mu.Unlock()
	if err != nil {
		mcLog.Error("cannot read remote kubeconfigs: no cluster is read from files until istiod restarts", "path", d.root, "error", err)
		return
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		mcLog.Error("cannot watch remote kubeconfigs", "path", d.root, "error", err)
		return
	}
	defer w.Close()
	d.watchTree(w)
	var fire <-chan time.Time
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		select {
		case <-stop:
			return
		case _, ok := <-w.Events:
			if !ok {
				return
			}
			if timer != nil {
				timer.Stop()
			}
			timer = time.NewTimer(250 * time.Millisecond)
			fire = timer.C
		case err, ok := <-w.Errors:
			if !ok {
				return
			}
			mcLog.Warn("watching remote kubeconfigs", "path", d.root, "error", err)
		case <-fire:
			fire = nil
			if err := d.read(); err != nil {
				mcLog.Warn("cannot read remote kubeconfigs: keeping the clusters as they are", "path", d.root, "error", err)
			}
			d.watchTree(w) // directories created meanwhile
		}
	}
}

// watchTree watches root and every directory below it.
func (d *kubeconfigDir) watchTree(w *fsnotify.Watcher) {
	_ = filepath.WalkDir(d.root, func(path string, e fs.DirEntry, err error) error {
		if err == nil && e.IsDir() {
			if err := w.Add(path); err != nil {
				mcLog.Warn("cannot watch directory", "path", path, "error", err)
			}
		}
		return nil
	})
}

// read walks the tree and enqueues the clusters whose kubeconfigs
// changed; on an error nothing changes.
func (d *kubeconfigDir) read() error {
	next := map[string][][]byte{}
	err := filepath.Walk(d.root, func(path string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if ext := filepath.Ext(path); (ext != ".yaml" && ext != ".yml") || info.Mode()&os.ModeType != 0 {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if len(data) == 0 {
			return nil // being written: another event follows
		}
		cfg, err := clientcmd.Load(data)
		if err != nil {
			return fmt.Errorf("%s: failed to parse kubeconfig: %v", path, err)
		}
		id, err := clusterIDOf(cfg)
		if err != nil {
			return fmt.Errorf("%s: %v", path, err)
		}
		if !slices.ContainsFunc(next[id], func(b []byte) bool { return string(b) == string(data) }) {
			next[id] = append(next[id], data)
		}
		return nil
	})
	if err != nil {
		return err
	}
	d.mu.Lock()
	var changed []string
	for _, id := range slices.Sorted(maps.Keys(next)) {
		if !slices.EqualFunc(next[id], d.byID[id], func(a, b []byte) bool { return string(a) == string(b) }) {
			changed = append(changed, id)
		}
	}
	for id := range d.byID {
		if _, ok := next[id]; !ok {
			changed = append(changed, id)
		}
	}
	d.byID = next
	d.mu.Unlock()
	for _, id := range changed {
		d.enqueue("/" + id)
	}
	return nil
}

// clusterIDOf is the cluster ID of a kubeconfig, as Istio picks it.
func clusterIDOf(cfg *clientcmdapi.Config) (string, error) {
	if ctx, ok := cfg.Contexts[cfg.CurrentContext]; ok && ctx != nil && ctx.Cluster != "" {
		return ctx.Cluster, nil
	}
	for _, name := range slices.Sorted(maps.Keys(cfg.Contexts)) {
		if ctx := cfg.Contexts[name]; ctx != nil && ctx.Cluster != "" {
			return ctx.Cluster, nil
		}
	}
	for _, name := range slices.Sorted(maps.Keys(cfg.Clusters)) {
		if name != "" {
			return name, nil
		}
	}
	return "", errors.New("unable to determine cluster ID from kubeconfig")
}
