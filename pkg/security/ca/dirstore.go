package ca

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
)

// DirStore keeps the root in a directory, for istiod without a cluster: the
// files ca-cert.pem, ca-key.pem (mode 0600) and root-cert.pem. The
// directory is created once, atomically (its files are written to a
// sibling temporary directory that is then renamed), so two processes
// starting together end up with one root. Update replaces each file by
// rename.
type DirStore struct {
	dir string
}

var _ Store = (*DirStore)(nil)

// NewDirStore returns a store in dir, which need not exist yet (an empty
// directory is fine).
func NewDirStore(dir string) *DirStore { return &DirStore{dir: dir} }

// DirError says that a DirStore's directory cannot be used: it cannot be
// read, created or written (permissions, a read-only file system, a file
// in the way). Trying again does not help; the caller should stop and say
// so.
type DirError struct {
	// Dir is the store's directory; Op says what failed with it.
	Dir, Op string
	Err     error
}

func (e *DirError) Error() string {
	return fmt.Sprintf("CA directory %s: %s: %v", e.Dir, e.Op, e.Err)
}

func (e *DirError) Unwrap() error { return e.Err }

// dirError wraps a file system error of s, without the path of a
// *fs.PathError (the directory or a temporary file in it): op names what was
// done with which file.
func (s *DirStore) dirError(op string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return &DirError{Dir: s.dir, Op: op, Err: err}
}

// Load implements Store.
func (s *DirStore) Load(context.Context) (*Material, error) {
	key, err := os.ReadFile(filepath.Join(s.dir, CAKeyFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, s.dirError("cannot read "+CAKeyFile, err)
	}
	m := &Material{CAKey: key}
	if m.CACert, err = os.ReadFile(filepath.Join(s.dir, CACertFile)); err != nil {
		return nil, s.dirError("cannot read "+CACertFile, err)
	}
	if m.RootCert, err = os.ReadFile(filepath.Join(s.dir, RootCertFile)); err != nil {
		return nil, s.dirError("cannot read "+RootCertFile, err)
	}
	if fi, err := os.Stat(filepath.Join(s.dir, CACertFile)); err == nil {
		m.Version = strconv.FormatInt(fi.ModTime().UnixNano(), 10)
	}
	return m, nil
}

// Create implements Store.
func (s *DirStore) Create(_ context.Context, m *Material) error {
	parent := filepath.Dir(filepath.Clean(s.dir))
	if err := os.MkdirAll(parent, 0o755); err != nil {
		// the path of the component that failed matters here
		return &DirError{Dir: s.dir, Op: "cannot create its parent directory", Err: err}
	}
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(s.dir)+"-")
	if err != nil {
		return s.dirError("cannot create it in "+parent, err)
	}
	defer os.RemoveAll(tmp)
	if err := os.Chmod(tmp, 0o755); err != nil {
		return s.dirError("cannot create it in "+parent, err)
	}
	if err := writeMaterial(tmp, m); err != nil {
		return s.dirError("cannot write the CA files in "+parent, err)
	}
	// An empty directory given by the user is replaced; removing a
	// directory with files fails, and so does renaming onto any existing
	// directory, which then means another writer was first.
	_ = os.Remove(s.dir)
	if err := os.Rename(tmp, s.dir); err != nil {
		if errors.Is(err, syscall.ENOTEMPTY) || errors.Is(err, syscall.EEXIST) {
			return ErrAlreadyExists
		}
		return s.dirError("cannot move the new CA files in place", err)
	}
	return nil
}

// Update implements Store.
func (s *DirStore) Update(ctx context.Context, m *Material) error {
	cur, err := s.Load(ctx)
	if err != nil {
		return err
	}
	if cur.Version != m.Version {
		return ErrConflict
	}
	if err := writeMaterial(s.dir, m); err != nil {
		return s.dirError("cannot write the CA files", err)
	}
	return nil
}

func writeMaterial(dir string, m *Material) error {
	for _, f := range []struct {
		name string
		data []byte
		mode os.FileMode
	}{
		{CAKeyFile, m.CAKey, 0o600},
		{CACertFile, m.CACert, 0o644},
		{RootCertFile, m.RootCert, 0o644},
	} {
		if err := writeFileAtomic(filepath.Join(dir, f.name), f.data, f.mode); err != nil {
			return err
		}
	}
	return nil
}

func writeFileAtomic(path string, data []byte, mode os.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+"-")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Chmod(mode); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

// String implements Store.
func (s *DirStore) String() string { return s.dir }
