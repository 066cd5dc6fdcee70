package ca

import (
	"context"
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
)

const (
	// CASecretName is the Secret holding the self-signed root.
	CASecretName = "istio-ca-secret"
	// CASecretType is its type.
	CASecretType corev1.SecretType = "istio.io/ca-root"
)

// SecretClient is the part of client-go's SecretInterface the store uses;
// kubernetes.Interface.CoreV1().Secrets(namespace) satisfies it.
type SecretClient interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*corev1.Secret, error)
	Create(ctx context.Context, secret *corev1.Secret, opts metav1.CreateOptions) (*corev1.Secret, error)
	Update(ctx context.Context, secret *corev1.Secret, opts metav1.UpdateOptions) (*corev1.Secret, error)
}

var _ SecretClient = (typedcorev1.SecretInterface)(nil)

// SecretStore keeps the root in Secret <namespace>/istio-ca-secret, shaped
// as Istio's: type istio.io/ca-root, keys ca-cert.pem, ca-key.pem,
// root-cert.pem (the same certificate), and cert-chain.pem and key.pem empty.
type SecretStore struct {
	client    SecretClient
	namespace string
}

var _ Store = (*SecretStore)(nil)

// NewSecretStore returns a store on client, which must be scoped to
// namespace (istiod's namespace).
func NewSecretStore(client SecretClient, namespace string) *SecretStore {
	return &SecretStore{client: client, namespace: namespace}
}

// Load implements Store.
func (s *SecretStore) Load(ctx context.Context) (*Material, error) {
	sec, err := s.client.Get(ctx, CASecretName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("reading Secret %s: %w", s, err)
	}
	return &Material{
		CACert:   sec.Data[CACertFile],
		CAKey:    sec.Data[CAKeyFile],
		RootCert: sec.Data[RootCertFile],
		Version:  sec.ResourceVersion,
	}, nil
}

// Create implements Store.
func (s *SecretStore) Create(ctx context.Context, m *Material) error {
	sec := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: CASecretName, Namespace: s.namespace},
		Type:       CASecretType,
		Data: map[string][]byte{
			CertChainFile:  {},
			PrivateKeyFile: {},
			RootCertFile:   m.RootCert,
			CACertFile:     m.CACert,
			CAKeyFile:      m.CAKey,
		},
	}
	_, err := s.client.Create(ctx, sec, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return ErrAlreadyExists
	}
	if err != nil {
		return fmt.Errorf("creating Secret %s: %w", s, err)
	}
	return nil
}

// Update implements Store. It rewrites ca-cert.pem, ca-key.pem and
// root-cert.pem and keeps every other key.
func (s *SecretStore) Update(ctx context.Context, m *Material) error {
	cur, err := s.client.Get(ctx, CASecretName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("reading Secret %s: %w", s, err)
	}
	if cur.ResourceVersion != m.Version {
		return ErrConflict
	}
	next := cur.DeepCopy()
	next.Data = maps.Clone(cur.Data)
	if next.Data == nil {
		next.Data = map[string][]byte{}
	}
	next.Data[CACertFile] = m.CACert
	next.Data[CAKeyFile] = m.CAKey
	next.Data[RootCertFile] = m.RootCert
	_, err = s.client.Update(ctx, next, metav1.UpdateOptions{})
	if apierrors.IsConflict(err) {
		return ErrConflict
	}
	if err != nil {
		return fmt.Errorf("updating Secret %s: %w", s, err)
	}
	return nil
}

// String implements Store.
func (s *SecretStore) String() string { return s.namespace + "/" + CASecretName }
