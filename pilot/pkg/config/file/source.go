package file

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/meshplane/istiod/pilot/pkg/config/kube/crd"
	"github.com/meshplane/istiod/pilot/pkg/config/storeview"
	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/config/schema/collection"
	"github.com/meshplane/istiod/pkg/diag"
	"github.com/meshplane/istiod/pkg/kube/krt"
	"github.com/meshplane/istiod/pkg/log"
	"github.com/meshplane/istiod/pkg/monitoring"
)

var scope = log.RegisterScope("file", "directory config source")

// Options configure a directory source.
type Options struct {
	// Dir is the directory read recursively.
	Dir string
	// Schemas are the kinds stored; documents of other known kinds are parsed
	// and reported, not stored.
	Schemas collection.Schemas
	// Domain is set on every config (e.g. cluster.local).
	Domain string
	// DefaultNamespace is given to namespaced objects without a namespace.
	DefaultNamespace string
	// Debounce is the quiet period after a file event before re-reading
	// (default 100ms).
	Debounce time.Duration
	// ResyncPeriod re-reads the directory even without events, so a missed
	// event heals (default 30s).
	ResyncPeriod time.Duration
	// Problems receives the problems of each file (may be nil).
	Problems *diag.Board
	// Krt registers the source's collections for /debug/krtz (may be nil).
	Krt *krt.DebugHandler
	// Now stamps creation times (default time.Now).
	Now func() time.Time
	// NewWatcher creates the watcher of the tree (default fsnotify's). A
	// directory it cannot watch (e.g. inotify out of watches) is logged at
	// WARN and listed on Problems; its changes arrive with the resync.
	NewWatcher func() (Watcher, error)
}

// Source is a read-only ConfigStoreController over a directory of YAML/JSON.
//
// Each reload re-reads changed files, diffs objects by content hash and emits
// add/update/delete events carrying a monotonically increasing version as
// their ResourceVersion. A rejected document never affects the others, and
// while a file holds rejected documents the objects it served before keep
// serving (last good state) until the file is fixed or removed.
type Source struct {
	*storeview.View
	opts    Options
	stop    chan struct{}
	kinds   map[config.GroupVersionKind]*kindStore
	version atomic.Uint64
	synced  atomic.Bool

	mu      sync.Mutex // guards files, current and dropped during a reload
	files   map[string]*fileState
	current map[config.GroupVersionKind]map[string]entry
	dropped droppedLog
}

type kindStore struct {
	collection krt.StaticCollection[config.Config]
}

// fileState is what one file last yielded.
type fileState struct {
	hash    [32]byte
	objects map[string]entry // by config key
	notes   fileNotes        // what the last parse said, for the log
}

type entry struct {
	cfg  config.Config
	hash [32]byte
	file string
}

var _ model.ConfigStoreController = (*Source)(nil)

// New builds a source; nothing is read until Run.
func New(opts Options) (*Source, error) {
	if opts.Dir == "" {
		return nil, fmt.Errorf("file source: directory is required")
	}
	if info, err := os.Stat(opts.Dir); err != nil {
		return nil, fmt.Errorf("file source: %v", err)
	} else if !info.IsDir() {
		return nil, fmt.Errorf("file source: %s is not a directory", opts.Dir)
	}
	if opts.Debounce <= 0 {
		opts.Debounce = 100 * time.Millisecond
	}
	if opts.ResyncPeriod <= 0 {
		opts.ResyncPeriod = 30 * time.Second
	}
	if opts.DefaultNamespace == "" {
		opts.DefaultNamespace = "default"
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.NewWatcher == nil {
		opts.NewWatcher = newFSWatcher
	}
	s := &Source{
		View:    storeview.New(),
		opts:    opts,
		stop:    make(chan struct{}),
		kinds:   map[config.GroupVersionKind]*kindStore{},
		files:   map[string]*fileState{},
		current: map[config.GroupVersionKind]map[string]entry{},
	}
	for _, sc := range opts.Schemas.All() {
		// unsynced until the first read of the directory, so that nothing
		// downstream mistakes the empty start for the directory's content
		kopts := []krt.CollectionOption{krt.WithName("file/" + sc.Kind()), krt.WithStop(s.stop), krt.Unsynced()}
		if opts.Krt != nil {
			kopts = append(kopts, krt.WithDebugging(opts.Krt))
		}
		c := krt.NewStaticCollection[config.Config](nil, kopts...)
		s.kinds[sc.GroupVersionKind()] = &kindStore{collection: c}
		s.Add(sc.GroupVersionKind(), c)
		s.current[sc.GroupVersionKind()] = map[string]entry{}
	}
	return s, nil
}

// Schemas returns the stored kinds.
func (s *Source) Schemas() collection.Schemas { return s.opts.Schemas }

// Create is not supported: files are edited on disk.
func (s *Source) Create(config.Config) (string, error) { return "", model.ErrNotWritable }

// Update is not supported.
func (s *Source) Update(config.Config) (string, error) { return "", model.ErrNotWritable }

// UpdateStatus is not supported.
func (s *Source) UpdateStatus(config.Config) (string, error) { return "", model.ErrNotWritable }

// Patch is not supported.
func (s *Source) Patch(config.Config, model.PatchFunc) (string, error) {
	return "", model.ErrNotWritable
}

// Delete is not supported.
func (s *Source) Delete(config.GroupVersionKind, string, string, *string) error {
	return model.ErrNotWritable
}

// HasSynced reports whether the first read of the directory completed.
func (s *Source) HasSynced() bool { return s.synced.Load() }

// Version is the version of the last change (0 before the first object).
func (s *Source) Version() uint64 { return s.version.Load() }

// Reload re-reads the directory now and applies the differences. Changed
// files are parsed in parallel; their results are applied in path order.
func (s *Source) Reload() {
	s.mu.Lock()
	defer s.mu.Unlock()
	paths, err := ListInputs([]string{s.opts.Dir})
	if err != nil {
		scope.Warnf("cannot list %s: %v", s.opts.Dir, err)
		return
	}
	results := make([]*readResult, len(paths))
	work := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < runtime.GOMAXPROCS(0); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				results[i] = s.readFile(paths[i], s.files[paths[i]])
			}
		}()
	}
	for i := range paths {
		work <- i
	}
	close(work)
	wg.Wait()

	seen := map[string]bool{}
	for i, p := range paths {
		seen[p] = true
		if r := results[i]; r != nil {
			logFixed(p, s.files[p], r.state)
			s.files[p] = r.state
			s.report(p, r.problems)
		}
	}
	for p := range s.files {
		if !seen[p] {
			delete(s.files, p)
			s.report(p, nil)
			scope.Infof("file %s removed", p)
		}
	}
	s.dropped.update(s.files)
	s.apply(paths)
	if !s.synced.Load() {
		for _, k := range s.kinds {
			k.collection.MarkSynced()
		}
		s.synced.Store(true)
	}
}

// readResult is the new state of a changed file.
type readResult struct {
	state    *fileState
	problems []diag.Problem
}

// readFile computes a file's new state, or nil when it is unchanged or
// unreadable (then its last state stays). It only reads s.opts.
func (s *Source) readFile(path string, prev *fileState) *readResult {
	data, err := os.ReadFile(path)
	if err != nil {
		// the file may be mid-replacement; keep its last state and retry on the next event
		scope.Warnf("cannot read %s: %v", path, err)
		return nil
	}
	h := sha256.Sum256(data)
	if prev != nil && prev.hash == h {
		return nil
	}
	objects, problems, notes := s.parse(path, data)
	rejected := len(notes.broken) > 0
	if rejected && prev != nil {
		// last good: objects this file served before stay until it is fixed
		for k, e := range prev.objects {
			if _, ok := objects[k]; !ok {
				objects[k] = e
				problems = append(problems, diag.Problem{Severity: diag.Warning, Object: e.cfg.String(),
					Message: "serving the last good version of this object until the file is fixed"})
			}
		}
	}
	return &readResult{state: &fileState{hash: h, objects: objects, notes: notes}, problems: problems}
}

// parse decodes a file into the objects it defines and its problems.
func (s *Source) parse(path string, data []byte) (map[string]entry, []diag.Problem, fileNotes) {
	objects := map[string]entry{}
	var problems []diag.Problem
	var notes fileNotes
	for _, d := range crd.Parse(data, crd.Options{Validate: true, Domain: s.opts.Domain}) {
		obj := d.Where()
		for _, p := range d.Dropped {
			problems = append(problems, diag.Problem{Severity: diag.Warning, Object: obj, Field: p, Message: "unknown field dropped"})
			notes.dropped = append(notes.dropped, droppedField{object: d.Object(), field: p, line: d.Line})
		}
		for _, w := range d.Warnings {
			problems = append(problems, diag.Problem{Severity: diag.Warning, Object: obj, Message: w.Error()})
		}
		switch {
		case d.Err != nil:
			notes.reject(d.Object())
			problems = append(problems, diag.Problem{Severity: diag.Error, Object: obj, Message: "rejected: " + d.Err.Error()})
			monitoring.RejectedConfigs.WithLabelValues("file", "invalid").Inc()
			scope.Warnf("%s:%d %s: rejected: %v", path, d.Line, d.Object(), d.Err)
		case d.Unknown != nil:
			problems = append(problems, diag.Problem{Severity: diag.Warning, Object: obj,
				Message: fmt.Sprintf("unknown kind %s, skipped", d.Unknown.GroupVersionKind())})
			monitoring.RejectedConfigs.WithLabelValues("file", "unknown_kind").Inc()
		default:
			notes.accept(d.Object())
			s.addParsed(path, obj, d.Config, objects, &problems)
		}
	}
	return objects, problems, notes
}

func (s *Source) addParsed(path, obj string, cfg *config.Config, objects map[string]entry, problems *[]diag.Problem) {
	sc, stored := s.opts.Schemas.FindByGroupVersionKind(cfg.GroupVersionKind)
	if !stored {
		*problems = append(*problems, diag.Problem{Severity: diag.Warning, Object: obj,
			Message: fmt.Sprintf("kind %s is parsed but not stored by this control plane (is Gateway API support enabled?)", cfg.GroupVersionKind)})
		monitoring.RejectedConfigs.WithLabelValues("file", "kind_not_stored").Inc()
		return
	}
	if sc.IsClusterScoped() {
		cfg.Namespace = ""
	} else if cfg.Namespace == "" {
		cfg.Namespace = s.opts.DefaultNamespace
	}
	k := cfg.Key()
	if _, dup := objects[k]; dup {
		*problems = append(*problems, diag.Problem{Severity: diag.Error, Object: obj,
			Message: "duplicate object in the same file; the first one is used"})
		return
	}
	objects[k] = entry{cfg: *cfg, hash: contentHash(*cfg), file: path}
}

// contentHash covers what an object says (metadata and spec), not when it was read.
func contentHash(cfg config.Config) [32]byte {
	k, err := crd.ConvertConfig(cfg)
	if err != nil {
		return [32]byte{}
	}
	b, _ := json.Marshal(k)
	return sha256.Sum256(b)
}

func (s *Source) report(path string, problems []diag.Problem) {
	if s.opts.Problems != nil {
		s.opts.Problems.Report("file", path, problems)
	}
}

// apply merges the files' objects (the first file in path order wins a key
// defined twice) and turns the difference with the current state into events.
func (s *Source) apply(paths []string) {
	desired := map[config.GroupVersionKind]map[string]entry{}
	for g := range s.kinds {
		desired[g] = map[string]entry{}
	}
	sort.Strings(paths)
	for _, p := range paths {
		st := s.files[p]
		if st == nil {
			continue
		}
		var dups []diag.Problem
		for _, e := range st.objects {
			byKey := desired[e.cfg.GroupVersionKind]
			nk := e.cfg.Namespace + "/" + e.cfg.Name
			if prev, ok := byKey[nk]; ok && prev.file != p {
				dups = append(dups, diag.Problem{Severity: diag.Error, Object: e.cfg.String(),
					Message: "also defined in " + prev.file + ", which wins"})
				continue
			}
			byKey[nk] = e
		}
		if len(dups) > 0 && s.opts.Problems != nil {
			s.opts.Problems.Report("file-duplicates", p, dups)
		} else if s.opts.Problems != nil {
			s.opts.Problems.Clear("file-duplicates", p)
		}
	}
	for g, want := range desired {
		s.applyKind(g, want)
	}
}

func (s *Source) applyKind(g config.GroupVersionKind, want map[string]entry) {
	cur := s.current[g]
	ks := s.kinds[g]
	for nk, e := range want {
		old, exists := cur[nk]
		if exists && old.hash == e.hash {
			continue
		}
		cfg := e.cfg
		cfg.ResourceVersion = strconv.FormatUint(s.version.Add(1), 10)
		if exists {
			cfg.CreationTimestamp = old.cfg.CreationTimestamp
		} else if cfg.CreationTimestamp.IsZero() {
			cfg.CreationTimestamp = s.opts.Now().UTC().Truncate(time.Second)
		}
		e.cfg = cfg
		cur[nk] = e
		ks.collection.Set(cfg)
		event := "add"
		if exists {
			event = "update"
		}
		monitoring.ConfigEvents.WithLabelValues(g.Kind, event).Inc()
	}
	for nk, old := range cur {
		if _, ok := want[nk]; ok {
			continue
		}
		delete(cur, nk)
		s.version.Add(1)
		ks.collection.Delete(krtKey(old.cfg))
		monitoring.ConfigEvents.WithLabelValues(g.Kind, "delete").Inc()
	}
}

func krtKey(c config.Config) string {
	if c.Namespace == "" {
		return c.Name
	}
	return c.Namespace + "/" + c.Name
}
