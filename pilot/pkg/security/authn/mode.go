package authn

import (
	"istio.io/api/security/v1beta1"
)

// Mode is an mTLS mode of a workload port. The zero value is PERMISSIVE,
// Istio's mode when no PeerAuthentication says otherwise.
type Mode int

const (
	// ModePermissive accepts Istio mTLS and plain text.
	ModePermissive Mode = iota
	// ModeStrict accepts Istio mTLS only.
	ModeStrict
	// ModeDisable accepts plain text only.
	ModeDisable
)

// String returns the mode as PeerAuthentication spells it.
func (m Mode) String() string {
	switch m {
	case ModeStrict:
		return "STRICT"
	case ModeDisable:
		return "DISABLE"
	default:
		return "PERMISSIVE"
	}
}

// MarshalText writes String(), so modes read well in JSON.
func (m Mode) MarshalText() ([]byte, error) { return []byte(m.String()), nil }

// modeOf converts an API mode; ok is false for UNSET (and a nil setting),
// which inherits from the level above.
func modeOf(m *v1beta1.PeerAuthentication_MutualTLS) (mode Mode, ok bool) {
	switch m.GetMode() {
	case v1beta1.PeerAuthentication_MutualTLS_STRICT:
		return ModeStrict, true
	case v1beta1.PeerAuthentication_MutualTLS_PERMISSIVE:
		return ModePermissive, true
	case v1beta1.PeerAuthentication_MutualTLS_DISABLE:
		return ModeDisable, true
	default:
		return ModePermissive, false
	}
}
