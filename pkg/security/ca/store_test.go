package ca_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/meshplane/istiod/pkg/log/logtest"
	"github.com/meshplane/istiod/pkg/security/ca"
)

func secretStore(client *fake.Clientset) *ca.SecretStore {
	return ca.NewSecretStore(client.CoreV1().Secrets("istio-system"), "istio-system")
}

func TestSecretCreatedOnceAndReusedAfterRestart(t *testing.T) {
	logs := logtest.Capture(t)
	client := fake.NewClientset()
	first, _ := newECCA(t, ca.Options{Store: secretStore(client)})
	if n := len(logs.Lines("INFO", "\tpkica\t", "CASecret istio-ca-secret not found, will create one")); n != 1 {
		t.Fatalf("want one 'not found, will create one' line, got %d:\n%s", n, logs)
	}
	if n := len(logs.Lines("INFO", "\tpkica\t", "Using self-generated public key: -----BEGIN CERTIFICATE-----")); n != 1 {
		t.Fatalf("want one 'Using self-generated public key' line:\n%s", logs)
	}
	if n := len(logs.Lines("INFO", "Set secret name for self-signed CA cert rotator to istio-ca-secret")); n != 1 {
		t.Fatalf("rotator secret name line missing:\n%s", logs)
	}
	// restart: same Secret, same root, nothing created
	second, _ := newECCA(t, ca.Options{Store: secretStore(client)})
	if !bytes.Equal(first.RootCertPEM(), second.RootCertPEM()) {
		t.Fatal("a restarted CA minted a new root")
	}
	if n := len(logs.Lines("INFO", "Load signing key and cert from existing secret istio-system/istio-ca-secret")); n != 1 {
		t.Fatalf("load line missing:\n%s", logs)
	}
	creates := 0
	for _, a := range client.Actions() {
		if a.GetVerb() == "create" && a.GetResource().Resource == "secrets" {
			creates++
		}
	}
	if creates != 1 {
		t.Fatalf("%d Secret creates, want 1", creates)
	}
	// a certificate from the first verifies with the second's root
	id := "spiffe://cluster.local/ns/a/sa/b"
	chain, err := first.Sign(csrPEM(t, ecKey(t), "", id), []string{id}, 0)
	if err != nil {
		t.Fatal(err)
	}
	verify(t, parsePEMCert(t, chain[0]), second.RootCertPool(), epoch)
}

func TestSecretCreateRaceUsesTheirs(t *testing.T) {
	_ = logtest.Capture(t)
	client := fake.NewClientset()
	theirs, _ := newECCA(t, ca.Options{Store: secretStore(client)})
	// our first Get misses (they had not written yet); our Create then loses.
	missed := false
	client.PrependReactor("get", "secrets", func(k8stesting.Action) (bool, runtime.Object, error) {
		if missed {
			return false, nil, nil
		}
		missed = true
		return true, nil, apierrors.NewNotFound(schema.GroupResource{Resource: "secrets"}, "istio-ca-secret")
	})
	ours, _ := newECCA(t, ca.Options{Store: secretStore(client)})
	if !missed {
		t.Fatal("reactor not used")
	}
	if !bytes.Equal(ours.RootCertPEM(), theirs.RootCertPEM()) {
		t.Fatal("the replica that lost the Create race uses its own root")
	}
	sec, _ := client.CoreV1().Secrets("istio-system").Get(context.Background(), "istio-ca-secret", metav1.GetOptions{})
	if !bytes.Equal(sec.Data["ca-cert.pem"], theirs.RootCertPEM()) {
		t.Fatal("the Secret was overwritten")
	}
}

func TestConcurrentReplicasAgreeOnOneRoot(t *testing.T) {
	_ = logtest.Capture(t)
	client := fake.NewClientset()
	const n = 4
	roots := make([][]byte, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := ca.New(context.Background(), ca.Options{Store: secretStore(client), KeyType: ca.KeyECDSAP256})
			if err != nil {
				t.Error(err)
				return
			}
			roots[i] = c.RootCertPEM()
		}()
	}
	wg.Wait()
	for i := 1; i < n; i++ {
		if !bytes.Equal(roots[0], roots[i]) {
			t.Fatalf("replica %d has another root", i)
		}
	}
}

func TestSecretWithBadMaterialIsAClearError(t *testing.T) {
	_ = logtest.Capture(t)
	storeA, storeB := ca.NewMemoryStore(), ca.NewMemoryStore()
	newECCA(t, ca.Options{Store: storeA})
	newECCA(t, ca.Options{Store: storeB})
	a, _ := storeA.Load(context.Background())
	b, _ := storeB.Load(context.Background())
	for name, tc := range map[string]struct {
		key  []byte
		want string
	}{
		"garbage key":    {[]byte("-----BEGIN RSA PRIVATE KEY-----\nAAAA\n-----END RSA PRIVATE KEY-----\n"), "failed to parse private key PEM"},
		"another's key":  {b.CAKey, "the cert does not match the key"},
		"not PEM at all": {[]byte("nope"), "invalid PEM-encoded key"},
	} {
		t.Run(name, func(t *testing.T) {
			client := fake.NewClientset(&corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Name: "istio-ca-secret", Namespace: "istio-system"},
				Type:       "istio.io/ca-root",
				Data:       map[string][]byte{"ca-cert.pem": a.CACert, "ca-key.pem": tc.key, "root-cert.pem": a.CACert},
			})
			_, err := ca.New(context.Background(), ca.Options{Store: secretStore(client), KeyType: ca.KeyECDSAP256})
			if err == nil || !strings.Contains(err.Error(), "istio-system/istio-ca-secret") || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to name the Secret and say %q", err, tc.want)
			}
		})
	}
}

func TestSecretStoreErrors(t *testing.T) {
	client := fake.NewClientset()
	s := secretStore(client)
	ctx := context.Background()
	if _, err := s.Load(ctx); !errors.Is(err, ca.ErrNotFound) {
		t.Fatalf("Load of nothing = %v", err)
	}
	if err := s.Update(ctx, &ca.Material{}); !errors.Is(err, ca.ErrNotFound) {
		t.Fatalf("Update of nothing = %v", err)
	}
	m := &ca.Material{CACert: []byte("c"), CAKey: []byte("k"), RootCert: []byte("c")}
	if err := s.Create(ctx, m); err != nil {
		t.Fatal(err)
	}
	if err := s.Create(ctx, m); !errors.Is(err, ca.ErrAlreadyExists) {
		t.Fatalf("second Create = %v", err)
	}
	got, err := s.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	stale := *got
	stale.Version = "stale"
	if err := s.Update(ctx, &stale); !errors.Is(err, ca.ErrConflict) {
		t.Fatalf("stale Update = %v", err)
	}
	got.CACert = []byte("c2")
	if err := s.Update(ctx, got); err != nil {
		t.Fatal(err)
	}
	sec, _ := client.CoreV1().Secrets("istio-system").Get(ctx, "istio-ca-secret", metav1.GetOptions{})
	if string(sec.Data["ca-cert.pem"]) != "c2" || sec.Data["cert-chain.pem"] == nil || sec.Type != "istio.io/ca-root" {
		t.Fatalf("updated Secret %v", sec)
	}
	client.PrependReactor("get", "secrets", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("apiserver down")
	})
	if _, err := s.Load(ctx); err == nil || !strings.Contains(err.Error(), "apiserver down") || errors.Is(err, ca.ErrNotFound) {
		t.Fatalf("Load = %v", err)
	}
	if _, err := ca.New(ctx, ca.Options{Store: s, KeyType: ca.KeyECDSAP256}); err == nil || !strings.Contains(err.Error(), "apiserver down") {
		t.Fatalf("New with the apiserver down = %v", err)
	}
	if s.String() != "istio-system/istio-ca-secret" {
		t.Fatal(s.String())
	}
}

func TestDirStoreCreatesOnceAndReuses(t *testing.T) {
	_ = logtest.Capture(t)
	dir := filepath.Join(t.TempDir(), "ca")
	first, _ := newECCA(t, ca.Options{Store: ca.NewDirStore(dir)})
	for name, mode := range map[string]os.FileMode{"ca-cert.pem": 0o644, "ca-key.pem": 0o600, "root-cert.pem": 0o644} {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != mode {
			t.Errorf("%s mode %v, want %v", name, fi.Mode().Perm(), mode)
		}
	}
	onDisk, _ := os.ReadFile(filepath.Join(dir, "root-cert.pem"))
	if !bytes.Equal(onDisk, first.RootCertPEM()) {
		t.Fatal("root-cert.pem is not the root")
	}
	second, _ := newECCA(t, ca.Options{Store: ca.NewDirStore(dir)})
	if !bytes.Equal(first.RootCertPEM(), second.RootCertPEM()) {
		t.Fatal("restart minted a new root")
	}
	// nothing but the three files and no leftovers beside
	entries, _ := os.ReadDir(filepath.Dir(dir))
	if len(entries) != 1 {
		t.Fatalf("leftovers next to the CA dir: %v", entries)
	}
}

func TestDirStoreConcurrentCreateOneRoot(t *testing.T) {
	_ = logtest.Capture(t)
	dir := filepath.Join(t.TempDir(), "a", "ca")
	const n = 4
	roots := make([][]byte, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := ca.New(context.Background(), ca.Options{Store: ca.NewDirStore(dir), KeyType: ca.KeyECDSAP256})
			if err != nil {
				t.Error(err)
				return
			}
			roots[i] = c.RootCertPEM()
		}()
	}
	wg.Wait()
	for i := 1; i < n; i++ {
		if !bytes.Equal(roots[0], roots[i]) {
			t.Fatalf("process %d has another root", i)
		}
	}
}

func TestDirStoreEmptyDirIsUsedAndJunkDirRefused(t *testing.T) {
	_ = logtest.Capture(t)
	empty := t.TempDir()
	if _, err := ca.New(context.Background(), ca.Options{Store: ca.NewDirStore(empty), KeyType: ca.KeyECDSAP256}); err != nil {
		t.Fatalf("empty dir: %v", err)
	}
	junk := t.TempDir()
	if err := os.WriteFile(filepath.Join(junk, "notes.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := ca.New(context.Background(), ca.Options{Store: ca.NewDirStore(junk), KeyType: ca.KeyECDSAP256})
	if err == nil || !strings.Contains(err.Error(), junk) {
		t.Fatalf("dir with other files = %v", err)
	}
}

func TestMemoryStoreVersions(t *testing.T) {
	s := ca.NewMemoryStore()
	ctx := context.Background()
	if err := s.Update(ctx, &ca.Material{}); !errors.Is(err, ca.ErrNotFound) {
		t.Fatal(err)
	}
	if err := s.Create(ctx, &ca.Material{CACert: []byte("a")}); err != nil {
		t.Fatal(err)
	}
	if err := s.Create(ctx, &ca.Material{}); !errors.Is(err, ca.ErrAlreadyExists) {
		t.Fatal(err)
	}
	m, _ := s.Load(ctx)
	m.CACert[0] = 'z' // the caller owns its copy
	again, _ := s.Load(ctx)
	if string(again.CACert) != "a" {
		t.Fatal("Load shares its bytes")
	}
	if err := s.Update(ctx, &ca.Material{Version: "0"}); !errors.Is(err, ca.ErrConflict) {
		t.Fatal(err)
	}
	if err := s.Update(ctx, m); err != nil {
		t.Fatal(err)
	}
	if s.String() != "memory" {
		t.Fatal(s.String())
	}
}
