package mesh_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/meshplane/istiod/pkg/config/mesh"
)

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// startFile starts a FileSource with a short debounce and a subscribed
// counter; the source stops with the test.
func startFile(t *testing.T, path string, opts ...mesh.Option) (*mesh.FileSource, *counter) {
	t.Helper()
	stop := make(chan struct{})
	opts = append([]mesh.Option{mesh.WithStop(stop), mesh.WithDebounce(5 * time.Millisecond)}, opts...)
	fs, err := mesh.NewFileSource(path, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		close(stop)
		<-fs.Done()
	})
	calls := newCounter()
	fs.Subscribe(calls.inc)
	return fs, calls
}

// waitContent waits, on subscriber notifications, until the source holds
// want (nil: missing).
func waitContent(t *testing.T, fs *mesh.FileSource, calls *counter, want *string) {
	t.Helper()
	timeout := time.After(waitTimeout)
	for {
		got := fs.Current()
		if (got == nil && want == nil) || (got != nil && want != nil && *got == *want) {
			return
		}
		select {
		case <-calls.ch:
		case <-timeout:
			t.Fatalf("file source holds %v, want %v", deref(got), deref(want))
		}
	}
}

func deref(p *string) string {
	if p == nil {
		return "<missing>"
	}
	return *p
}

func TestFileSourceChanges(t *testing.T) {
	cases := []struct {
		name   string
		change func(t *testing.T, dir, path string)
		want   *string
	}{
		{
			name:   "rewrite in place",
			change: func(t *testing.T, _, path string) { writeFile(t, path, goodB) },
			want:   ptr(goodB),
		},
		{
			name: "atomic rename",
			change: func(t *testing.T, dir, path string) {
				tmp := filepath.Join(dir, ".mesh.tmp")
				writeFile(t, tmp, goodB)
				if err := os.Rename(tmp, path); err != nil {
					t.Fatal(err)
				}
			},
			want: ptr(goodB),
		},
		{
			name: "removed",
			change: func(t *testing.T, _, path string) {
				if err := os.Remove(path); err != nil {
					t.Fatal(err)
				}
			},
			want: nil,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "mesh")
			writeFile(t, path, goodA)
			fs, calls := startFile(t, path)
			if got := fs.Current(); got == nil || *got != goodA {
				t.Fatalf("initial content %v", deref(got))
			}
			tc.change(t, dir, path)
			waitContent(t, fs, calls, tc.want)
			// a second change is seen as well (the watch was re-armed)
			writeFile(t, path, "trustDomain: c.local\n")
			waitContent(t, fs, calls, ptr("trustDomain: c.local\n"))
		})
	}
}

// TestFileSourceConfigMapVolume mimics the kubelet's atomic writer: the file
// is a symlink through "..data", which is swapped to a new directory.
func TestFileSourceConfigMapVolume(t *testing.T) {
	dir := t.TempDir()
	mkVersion := func(name, content string) {
		if err := os.Mkdir(filepath.Join(dir, name), 0o755); err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(dir, name, "mesh"), content)
	}
	mkVersion("..v1", goodA)
	if err := os.Symlink("..v1", filepath.Join(dir, "..data")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join("..data", "mesh"), filepath.Join(dir, "mesh")); err != nil {
		t.Fatal(err)
	}
	fs, calls := startFile(t, filepath.Join(dir, "mesh"))
	if got := fs.Current(); got == nil || *got != goodA {
		t.Fatalf("initial content %v", deref(got))
	}

	mkVersion("..v2", goodB)
	if err := os.Symlink("..v2", filepath.Join(dir, "..data_tmp")); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(dir, "..data_tmp"), filepath.Join(dir, "..data")); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(dir, "..v1")); err != nil {
		t.Fatal(err)
	}
	waitContent(t, fs, calls, ptr(goodB))
}

func TestFileSourceAppears(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mesh")
	fs, calls := startFile(t, path)
	if fs.Current() != nil {
		t.Fatalf("missing file has content %q", *fs.Current())
	}
	writeFile(t, path, goodA)
	waitContent(t, fs, calls, ptr(goodA))
}

func TestFileSourceErrors(t *testing.T) {
	if _, err := mesh.NewFileSource(filepath.Join(t.TempDir(), "nodir", "mesh")); err == nil {
		t.Error("want an error for a directory that does not exist")
	}
}

// TestFileSourceResync checks the periodic re-read on a fake clock: file
// events only arm a debounce that never fires here.
func TestFileSourceResync(t *testing.T) {
	clock := newFakeClock()
	path := filepath.Join(t.TempDir(), "mesh")
	writeFile(t, path, goodA)
	fs, calls := startFile(t, path, mesh.WithClock(clock), mesh.WithDebounce(time.Hour), mesh.WithResync(time.Minute))
	clock.waitRegistered(t, time.Minute)

	writeFile(t, path, goodB)
	clock.Advance(time.Minute)
	waitContent(t, fs, calls, ptr(goodB))
	if got := calls.count(); got != 1 {
		t.Errorf("subscribers called %d times, want 1", got)
	}
}

func TestFileSourceStops(t *testing.T) {
	cases := []struct {
		name string
		stop func(fs *mesh.FileSource, stop chan struct{})
	}{
		{name: "stop channel", stop: func(_ *mesh.FileSource, stop chan struct{}) { close(stop) }},
		{name: "Close", stop: func(fs *mesh.FileSource, _ chan struct{}) { fs.Close(); fs.Close() }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			stop := make(chan struct{})
			path := filepath.Join(t.TempDir(), "mesh")
			fs, err := mesh.NewFileSource(path, mesh.WithStop(stop))
			if err != nil {
				t.Fatal(err)
			}
			tc.stop(fs, stop)
			select {
			case <-fs.Done():
			case <-time.After(waitTimeout):
				t.Fatal("file source goroutine did not stop")
			}
		})
	}
}

// TestWatcherFollowsFile wires a FileSource into a Watcher end to end.
func TestWatcherFollowsFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mesh")
	writeFile(t, path, goodA)
	fs, _ := startFile(t, path)
	w := mesh.NewWatcher([]mesh.Source{fs}, nil)
	changed := newCounter()
	w.AddMeshHandler(changed.inc)
	if w.Mesh().TrustDomain != "a.local" {
		t.Fatalf("trustDomain = %q", w.Mesh().TrustDomain)
	}

	writeFile(t, path, goodB)
	// A reader may catch the file truncated mid-write; wait for the final
	// state on handler calls.
	timeout := time.After(waitTimeout)
	for w.Mesh().TrustDomain != "b.local" {
		select {
		case <-changed.ch:
		case <-timeout:
			t.Fatalf("mesh not updated: trustDomain = %q", w.Mesh().TrustDomain)
		}
	}
	if changed.count() == 0 {
		t.Error("mesh handler not called")
	}
}
