package file_test

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	networking "istio.io/api/networking/v1alpha3"

	"github.com/meshplane/istiod/pilot/pkg/config/file"
	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/config/schema/collections"
	"github.com/meshplane/istiod/pkg/config/schema/gvk"
	"github.com/meshplane/istiod/pkg/diag"
)

const drA = `apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: a, namespace: ns}
spec: {host: a}
`

const drB = `apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: b, namespace: ns}
spec: {host: b}
`

type recorder struct {
	mu     sync.Mutex
	events []string
	ch     chan string
}

func newRecorder() *recorder { return &recorder{ch: make(chan string, 100)} }

func (r *recorder) handle(_, cur config.Config, e model.Event) {
	s := e.String() + " " + cur.Namespace + "/" + cur.Name + " rv=" + cur.ResourceVersion
	r.mu.Lock()
	r.events = append(r.events, s)
	r.mu.Unlock()
	r.ch <- s
}

// next waits for the next event; the timeout only guards against a hang.
func (r *recorder) next(t *testing.T) string {
	t.Helper()
	select {
	case s := <-r.ch:
		return s
	case <-time.After(10 * time.Second):
		t.Fatal("no event")
		return ""
	}
}

func (r *recorder) none(t *testing.T) {
	t.Helper()
	select {
	case s := <-r.ch:
		t.Fatalf("unexpected event %s", s)
	default:
	}
}

func write(t *testing.T, dir, name, content string) {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func newSource(t *testing.T, dir string, board *diag.Board) (*file.Source, *recorder) {
	t.Helper()
	s, err := file.New(file.Options{Dir: dir, Schemas: collections.Pilot, Domain: "cluster.local", Problems: board,
		Now: func() time.Time { return time.Unix(1000, 0) }})
	if err != nil {
		t.Fatal(err)
	}
	r := newRecorder()
	s.RegisterEventHandler(gvk.DestinationRule, r.handle)
	return s, r
}

func TestLoadUpdateDelete(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "a.yaml", drA)
	write(t, dir, "sub/b.yml", drB)
	write(t, dir, "ignored.txt", drA)
	s, r := newSource(t, dir, nil)
	s.Reload()
	got := []string{r.next(t), r.next(t)}
	if !(strings.HasPrefix(got[0], "add ns/") && strings.HasPrefix(got[1], "add ns/")) {
		t.Fatalf("events %v", got)
	}
	if n := len(s.List(gvk.DestinationRule, "ns")); n != 2 {
		t.Fatalf("listed %d", n)
	}
	a := s.Get(gvk.DestinationRule, "a", "ns")
	if a == nil || a.Domain != "cluster.local" || a.CreationTimestamp.Unix() != 1000 {
		t.Fatalf("Get a = %+v", a)
	}
	// unchanged content: no event
	s.Reload()
	r.none(t)
	// whitespace-only edit: same content, no event
	write(t, dir, "a.yaml", "\n\n"+drA)
	s.Reload()
	r.none(t)
	// real change: update with a higher version
	write(t, dir, "a.yaml", strings.Replace(drA, "host: a", "host: a2", 1))
	s.Reload()
	ev := r.next(t)
	if !strings.HasPrefix(ev, "update ns/a rv=3") {
		t.Errorf("event %q", ev)
	}
	if h := s.Get(gvk.DestinationRule, "a", "ns").Spec.(*networking.DestinationRule).Host; h != "a2" {
		t.Errorf("host %q", h)
	}
	if s.Version() != 3 {
		t.Errorf("version %d", s.Version())
	}
	// delete the file: delete event
	if err := os.Remove(filepath.Join(dir, "sub/b.yml")); err != nil {
		t.Fatal(err)
	}
	s.Reload()
	if ev := r.next(t); !strings.HasPrefix(ev, "delete ns/b") {
		t.Errorf("event %q", ev)
	}
	if s.Get(gvk.DestinationRule, "b", "ns") != nil {
		t.Error("b still served")
	}
}

func TestBadDocumentKeepsOthersAndLastGood(t *testing.T) {
	dir := t.TempDir()
	board := diag.New(nil)
	write(t, dir, "x.yaml", drA+"---\n"+drB)
	s, r := newSource(t, dir, board)
	s.Reload()
	r.next(t)
	r.next(t)
	// b turns bad (type error), a changes: a updates, b keeps its last good state
	bad := strings.Replace(drA, "host: a", "host: a3", 1) + "---\n" + strings.Replace(drB, "spec: {host: b}", "spec: {host: [b]}", 1)
	write(t, dir, "x.yaml", bad)
	s.Reload()
	if ev := r.next(t); !strings.HasPrefix(ev, "update ns/a") {
		t.Errorf("event %q", ev)
	}
	r.none(t)
	if b := s.Get(gvk.DestinationRule, "b", "ns"); b == nil || b.Spec.(*networking.DestinationRule).Host != "b" {
		t.Fatalf("last good b not served: %+v", b)
	}
	problems := board.List()
	var sawErr, sawKeep bool
	for _, p := range problems {
		if p.Severity == diag.Error && strings.Contains(p.Message, "spec.host: cannot unmarshal array into string") && strings.Contains(p.Object, "DestinationRule ns/b") {
			sawErr = true
		}
		if strings.Contains(p.Message, "last good") {
			sawKeep = true
		}
	}
	if !sawErr || !sawKeep {
		t.Errorf("problems %+v", problems)
	}
	// fixing the file clears the problems; removing b from a good file deletes it
	write(t, dir, "x.yaml", strings.Replace(drA, "host: a", "host: a3", 1))
	s.Reload()
	if ev := r.next(t); !strings.HasPrefix(ev, "delete ns/b") {
		t.Errorf("event %q", ev)
	}
	if n := len(board.List()); n != 0 {
		t.Errorf("problems remain: %+v", board.List())
	}
}

func TestWarningsForDroppedFieldsUnknownAndUnstoredKinds(t *testing.T) {
	dir := t.TempDir()
	board := diag.New(nil)
	write(t, dir, "w.yaml", `apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: a}
spec: {host: a, hostz: b}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: r, namespace: ns}
spec: {}
---
apiVersion: example.com/v1
kind: Widget
metadata: {name: w}
`)
	s, r := newSource(t, dir, board)
	s.Reload()
	if ev := r.next(t); ev != "add default/a rv=1" {
		t.Errorf("event %q (objects without a namespace go to default)", ev)
	}
	msgs := ""
	for _, p := range board.List() {
		msgs += p.Object + "|" + p.Field + "|" + p.Message + "\n"
	}
	for _, want := range []string{"spec.hostz|unknown field dropped", "HTTPRoute ns/r||kind gateway.networking.k8s.io/v1/HTTPRoute is parsed but not stored", "unknown kind example.com/v1/Widget"} {
		if !strings.Contains(msgs, want) {
			t.Errorf("problems lack %q:\n%s", want, msgs)
		}
	}
}

func TestDuplicateAcrossFilesFirstWins(t *testing.T) {
	dir := t.TempDir()
	board := diag.New(nil)
	write(t, dir, "1.yaml", drA)
	write(t, dir, "2.yaml", strings.Replace(drA, "host: a", "host: other", 1))
	s, r := newSource(t, dir, board)
	s.Reload()
	r.next(t)
	if h := s.Get(gvk.DestinationRule, "a", "ns").Spec.(*networking.DestinationRule).Host; h != "a" {
		t.Errorf("host %q, want the first file's", h)
	}
	if board.Count(diag.Error) != 1 {
		t.Errorf("problems %+v", board.List())
	}
}

func TestWatchPicksUpChanges(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "a.yaml", drA)
	s, r := newSource(t, dir, nil)
	stop := make(chan struct{})
	defer close(stop)
	go s.Run(stop)
	if ev := r.next(t); !strings.HasPrefix(ev, "add ns/a") {
		t.Fatalf("event %q", ev)
	}
	// the initial events may arrive before the source reports synced
	deadline := time.Now().Add(10 * time.Second)
	for !s.HasSynced() {
		if time.Now().After(deadline) {
			t.Fatal("not synced after first load")
		}
		time.Sleep(time.Millisecond)
	}
	write(t, dir, "new/b.yaml", drB)
	if ev := r.next(t); !strings.HasPrefix(ev, "add ns/b") {
		t.Fatalf("event %q", ev)
	}
	if err := os.Remove(filepath.Join(dir, "a.yaml")); err != nil {
		t.Fatal(err)
	}
	if ev := r.next(t); !strings.HasPrefix(ev, "delete ns/a") {
		t.Fatalf("event %q", ev)
	}
}

func TestReadOnly(t *testing.T) {
	s, _ := newSource(t, t.TempDir(), nil)
	if _, err := s.Create(config.Config{}); err != model.ErrNotWritable {
		t.Errorf("Create: %v", err)
	}
	if s.Get(gvk.HTTPRoute, "x", "y") != nil {
		t.Error("unknown kind returned an object")
	}
	if _, err := file.New(file.Options{Dir: "/nonexistent"}); err == nil {
		t.Error("missing directory accepted")
	}
}

// Downstream collections must not take the empty start for the directory's
// content: the kinds are unsynced until the first read.
func TestUnsyncedUntilFirstRead(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "a.yaml", drA)
	s, _ := newSource(t, dir, nil)
	if s.HasSynced() || s.Collection(gvk.DestinationRule).HasSynced() {
		t.Fatal("synced before reading the directory")
	}
	s.Reload()
	if !s.HasSynced() || !s.Collection(gvk.DestinationRule).HasSynced() {
		t.Fatal("not synced after the first read")
	}
}
