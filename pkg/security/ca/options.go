package ca

import (
	"time"

	"github.com/meshplane/istiod/pkg/clock"
)

// Defaults, as Istio's (security/pkg/cmd and pilot/pkg/bootstrap/istio_ca.go).
const (
	// DefaultTrustDomain is the mesh trust domain when none is configured.
	DefaultTrustDomain = "cluster.local"
	// DefaultRSAKeySize is CITADEL_SELF_SIGNED_CA_RSA_KEY_SIZE's default.
	DefaultRSAKeySize = 2048
	// MinimumRSAKeySize is the smallest RSA key accepted for a root.
	MinimumRSAKeySize = 2048
	// DefaultRootCertTTL is CITADEL_SELF_SIGNED_CA_CERT_TTL's default (10 years).
	DefaultRootCertTTL = 3650 * 24 * time.Hour
	// DefaultWorkloadCertTTL is DEFAULT_WORKLOAD_CERT_TTL's default.
	DefaultWorkloadCertTTL = 24 * time.Hour
	// DefaultMaxWorkloadCertTTL is MAX_WORKLOAD_CERT_TTL's default (90 days).
	DefaultMaxWorkloadCertTTL = 90 * 24 * time.Hour
	// DefaultRootCertCheckInterval is
	// CITADEL_SELF_SIGNED_ROOT_CERT_CHECK_INTERVAL's default.
	DefaultRootCertCheckInterval = time.Hour
	// DefaultRootCertGracePeriodPercentile is
	// CITADEL_SELF_SIGNED_ROOT_CERT_GRACE_PERIOD_PERCENTILE's default: the
	// root is rotated in the last 20% of its lifetime.
	DefaultRootCertGracePeriodPercentile = 20
	// DefaultPluggedCertDir is ROOT_CA_DIR's default. Istio's default is
	// relative to the working directory, which is / in its image.
	DefaultPluggedCertDir = "./etc/cacerts"
	// ClockSkewGracePeriod backdates NotBefore of every issued leaf.
	ClockSkewGracePeriod = 2 * time.Minute
)

// KeyType is the kind of key of a self-signed root.
type KeyType int

const (
	// KeyRSA is an RSA key of Options.RSAKeySize bits (Istio's only choice).
	KeyRSA KeyType = iota
	// KeyECDSAP256 is an ECDSA key on curve P-256.
	KeyECDSAP256
)

// Options configure a CA. Zero fields take the defaults above; read the
// environment once in bootstrap and pass the values here.
type Options struct {
	// TrustDomain is the subject organisation of a self-signed root.
	TrustDomain string
	// KeyType of a newly created self-signed root (and of istiod's serving
	// key, which follows the signing key: RSA 2048 or ECDSA on its curve).
	KeyType KeyType
	// RSAKeySize of a new RSA root (CITADEL_SELF_SIGNED_CA_RSA_KEY_SIZE).
	RSAKeySize int
	// RootCertTTL is the lifetime of a self-signed root and the requested
	// lifetime of istiod's serving certificate (CITADEL_SELF_SIGNED_CA_CERT_TTL).
	RootCertTTL time.Duration
	// DefaultCertTTL applies when a CSR asks for a non-positive TTL
	// (DEFAULT_WORKLOAD_CERT_TTL).
	DefaultCertTTL time.Duration
	// MaxCertTTL is the longest TTL a CSR may ask for (MAX_WORKLOAD_CERT_TTL).
	MaxCertTTL time.Duration
	// RootCertCheckInterval is how often Run checks the self-signed root
	// (CITADEL_SELF_SIGNED_ROOT_CERT_CHECK_INTERVAL). Zero means the
	// default; a negative value disables rotation (map Istio's "0 or
	// negative disables" to -1 in bootstrap).
	RootCertCheckInterval time.Duration
	// RootCertGracePeriodPercentile: the root is rotated once less than this
	// percentage of its lifetime remains
	// (CITADEL_SELF_SIGNED_ROOT_CERT_GRACE_PERIOD_PERCENTILE).
	RootCertGracePeriodPercentile int
	// DisableRootRotatorJitter turns off the random delay (below
	// RootCertCheckInterval) before the first check
	// (CITADEL_ENABLE_JITTER_FOR_ROOT_CERT_ROTATOR=false).
	DisableRootRotatorJitter bool
	// PluggedCertDir is where a plugged-in CA is looked for first (ROOT_CA_DIR).
	// Empty: do not look.
	PluggedCertDir string
	// Store keeps the self-signed root when no plugged-in CA is found:
	// NewSecretStore in a cluster, NewDirStore without one. Nil: a new
	// memory store (the root lives as long as the process).
	Store Store
	// Clock is the time source (default the real clock).
	Clock clock.Clock
}

func (o Options) withDefaults() Options {
	if o.TrustDomain == "" {
		o.TrustDomain = DefaultTrustDomain
	}
	if o.RSAKeySize == 0 {
		o.RSAKeySize = DefaultRSAKeySize
	}
	if o.RootCertTTL == 0 {
		o.RootCertTTL = DefaultRootCertTTL
	}
	if o.DefaultCertTTL == 0 {
		o.DefaultCertTTL = DefaultWorkloadCertTTL
	}
	if o.MaxCertTTL == 0 {
		o.MaxCertTTL = DefaultMaxWorkloadCertTTL
	}
	if o.RootCertCheckInterval == 0 {
		o.RootCertCheckInterval = DefaultRootCertCheckInterval
	}
	if o.RootCertGracePeriodPercentile == 0 {
		o.RootCertGracePeriodPercentile = DefaultRootCertGracePeriodPercentile
	}
	if o.Store == nil {
		o.Store = NewMemoryStore()
	}
	if o.Clock == nil {
		o.Clock = clock.Real()
	}
	return o
}
