package ca

import (
	"bytes"
	"context"
	"errors"
	"strconv"
	"sync"
)

// Names of the keys of the CA Secret and of the files of a CA directory,
// as Istio's.
const (
	CACertFile     = "ca-cert.pem"
	CAKeyFile      = "ca-key.pem"
	RootCertFile   = "root-cert.pem"
	CertChainFile  = "cert-chain.pem"
	PrivateKeyFile = "key.pem"
)

// Errors a Store returns, tested with errors.Is.
var (
	// ErrNotFound: the store holds no material yet.
	ErrNotFound = errors.New("CA material not found")
	// ErrAlreadyExists: Create lost to another writer.
	ErrAlreadyExists = errors.New("CA material already exists")
	// ErrConflict: Update was based on a stale version.
	ErrConflict = errors.New("CA material was changed by another writer")
)

// Material is the PEM content of a self-signed CA as it is stored.
type Material struct {
	// CACert is the signing certificate (ca-cert.pem).
	CACert []byte
	// CAKey is its private key (ca-key.pem).
	CAKey []byte
	// RootCert is the root (root-cert.pem); for a self-signed CA the same
	// certificate as CACert.
	RootCert []byte
	// Version identifies what was loaded (a Secret's resourceVersion);
	// Update succeeds only if the store still holds that version.
	Version string
}

func (m *Material) clone() *Material {
	c := *m
	c.CACert = bytes.Clone(m.CACert)
	c.CAKey = bytes.Clone(m.CAKey)
	c.RootCert = bytes.Clone(m.RootCert)
	return &c
}

// Store keeps the self-signed root across restarts and shares it between
// replicas. Implementations are safe for concurrent use; returned Material
// belongs to the caller.
type Store interface {
	// Load returns the stored material, or ErrNotFound.
	Load(ctx context.Context) (*Material, error)
	// Create stores m if nothing is stored yet, else returns ErrAlreadyExists.
	Create(ctx context.Context, m *Material) error
	// Update replaces the stored material with m if the store still holds
	// m.Version, else returns ErrConflict.
	Update(ctx context.Context, m *Material) error
	// String names the store in logs ("istio-system/istio-ca-secret").
	String() string
}

// MemoryStore keeps the material in memory: the root lives as long as the
// process (Istio's behaviour without a cluster).
type MemoryStore struct {
	mu      sync.Mutex
	m       *Material
	version int
}

var _ Store = (*MemoryStore)(nil)

// NewMemoryStore returns an empty memory store.
func NewMemoryStore() *MemoryStore { return &MemoryStore{} }

// Load implements Store.
func (s *MemoryStore) Load(context.Context) (*Material, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		return nil, ErrNotFound
	}
	return s.m.clone(), nil
}

// Create implements Store.
func (s *MemoryStore) Create(_ context.Context, m *Material) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m != nil {
		return ErrAlreadyExists
	}
	s.put(m)
	return nil
}

// Update implements Store.
func (s *MemoryStore) Update(_ context.Context, m *Material) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		return ErrNotFound
	}
	if m.Version != s.m.Version {
		return ErrConflict
	}
	s.put(m)
	return nil
}

func (s *MemoryStore) put(m *Material) {
	s.version++
	s.m = m.clone()
	s.m.Version = strconv.Itoa(s.version)
}

// String implements Store.
func (s *MemoryStore) String() string { return "memory" }
