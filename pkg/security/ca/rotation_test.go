package ca_test

import (
	"bytes"
	"context"
	"crypto/x509"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/meshplane/istiod/pkg/clock"
	"github.com/meshplane/istiod/pkg/log/logtest"
	"github.com/meshplane/istiod/pkg/security/ca"
)

func TestRootRotationDue(t *testing.T) {
	root := &x509.Certificate{NotBefore: epoch, NotAfter: epoch.Add(100 * time.Hour)}
	for _, tc := range []struct {
		at   time.Duration
		pct  int
		due  bool
		wait time.Duration
	}{
		{0, 20, false, 80 * time.Hour},
		{79 * time.Hour, 20, false, time.Hour},
		{80*time.Hour - time.Second, 20, false, time.Second},
		{80 * time.Hour, 20, true, 0}, // the window opens at exactly 80%
		{99 * time.Hour, 20, true, 0},
		{101 * time.Hour, 20, true, 0}, // expired
		{49 * time.Hour, 50, false, time.Hour},
		{51 * time.Hour, 50, true, 0},
	} {
		due, wait := ca.RootRotationDue(root, epoch.Add(tc.at), tc.pct)
		if due != tc.due || wait != tc.wait {
			t.Errorf("at %v (%d%%): due=%v wait=%v, want %v %v", tc.at, tc.pct, due, wait, tc.due, tc.wait)
		}
	}
}

func TestRotateSelfSignedRootInTheSecret(t *testing.T) {
	logs := logtest.Capture(t)
	client := fake.NewClientset()
	fc := clock.NewFake(epoch)
	opts := ca.Options{Store: secretStore(client), Clock: fc, KeyType: ca.KeyECDSAP256, RootCertTTL: 100 * time.Hour}
	c, err := ca.New(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	var changes atomic.Int32
	c.OnRootChange(func() { changes.Add(1) })
	old := mustRoot(t, c)
	oldPool := c.RootCertPool()
	oldLeaf := signLeaf(t, c, []string{productpage}, 99*time.Hour)

	fc.Advance(79 * time.Hour)
	if changed, err := c.CheckRootRotation(t.Context()); changed || err != nil {
		t.Fatalf("before the window: %v %v", changed, err)
	}
	if len(logs.Lines("INFO", "\trootcertrotator\t", "Root cert is not about to expire, skipping root cert rotation.")) != 1 {
		t.Fatalf("skip line missing:\n%s", logs)
	}
	fc.Advance(2 * time.Hour)
	before, _ := client.CoreV1().Secrets("istio-system").Get(t.Context(), "istio-ca-secret", metav1.GetOptions{})
	if changed, err := c.CheckRootRotation(t.Context()); !changed || err != nil {
		t.Fatalf("in the window: %v %v", changed, err)
	}
	if changes.Load() != 1 {
		t.Fatalf("%d root change notifications", changes.Load())
	}
	now := fc.Now()
	root := mustRoot(t, c)
	if root.Equal(old) || !root.NotBefore.Equal(now) || !root.NotAfter.Equal(now.Add(100*time.Hour)) {
		t.Fatalf("new root validity %v .. %v", root.NotBefore, root.NotAfter)
	}
	if root.Subject.String() != old.Subject.String() || !bytes.Equal(root.SubjectKeyId, old.SubjectKeyId) || !bytes.Equal(root.RawSubjectPublicKeyInfo, old.RawSubjectPublicKeyInfo) {
		t.Fatal("the rotated root must keep subject, key and SKI")
	}
	sec, _ := client.CoreV1().Secrets("istio-system").Get(t.Context(), "istio-ca-secret", metav1.GetOptions{})
	if !bytes.Equal(sec.Data["ca-cert.pem"], c.RootCertPEM()) || !bytes.Equal(sec.Data["root-cert.pem"], c.RootCertPEM()) ||
		!bytes.Equal(sec.Data["ca-key.pem"], before.Data["ca-key.pem"]) || sec.Type != "istio.io/ca-root" || len(sec.Data) != 5 {
		t.Fatal("Secret after rotation")
	}
	// old and new certificates verify with either root
	verify(t, oldLeaf, c.RootCertPool(), now)
	newLeaf := signLeaf(t, c, []string{productpage}, time.Hour)
	verify(t, newLeaf, oldPool, now)
	if len(logs.Lines("INFO", "Root certificate rotation is completed successfully.")) != 1 {
		t.Fatalf("completion line missing:\n%s", logs)
	}
	// a second check right after does nothing
	if changed, err := c.CheckRootRotation(t.Context()); changed || err != nil {
		t.Fatalf("after rotation: %v %v", changed, err)
	}
}

func TestReplicaAdoptsRotatedRoot(t *testing.T) {
	logs := logtest.Capture(t)
	client := fake.NewClientset()
	fc := clock.NewFake(epoch)
	opts := ca.Options{Store: secretStore(client), Clock: fc, KeyType: ca.KeyECDSAP256, RootCertTTL: 100 * time.Hour}
	a, err := ca.New(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	b, err := ca.New(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	var bChanges atomic.Int32
	b.OnRootChange(func() { bChanges.Add(1) })
	fc.Advance(90 * time.Hour)
	if changed, _ := a.CheckRootRotation(t.Context()); !changed {
		t.Fatal("a did not rotate")
	}
	if changed, err := b.CheckRootRotation(t.Context()); !changed || err != nil {
		t.Fatalf("b: %v %v", changed, err)
	}
	if !bytes.Equal(a.RootCertPEM(), b.RootCertPEM()) || bChanges.Load() != 1 {
		t.Fatal("b did not adopt a's rotated root")
	}
	if len(logs.Lines("WARN", "CA cert in KeyCertBundle does not match CA cert in istio-system/istio-ca-secret")) != 1 {
		t.Fatalf("reload warning missing:\n%s", logs)
	}
}

// racingStore lets a competitor write just before our Update.
type racingStore struct {
	ca.Store
	competitor *ca.Material
}

func (r *racingStore) Update(ctx context.Context, m *ca.Material) error {
	if r.competitor != nil {
		cur, _ := r.Store.Load(ctx)
		next := *r.competitor
		next.Version = cur.Version
		if err := r.Store.Update(ctx, &next); err != nil {
			return err
		}
		r.competitor = nil
	}
	return r.Store.Update(ctx, m)
}

func TestRotationConflictAdoptsTheWinner(t *testing.T) {
	_ = logtest.Capture(t)
	fc := clock.NewFake(epoch)
	otherStore := ca.NewMemoryStore()
	if _, err := ca.New(t.Context(), ca.Options{Store: otherStore, Clock: fc, KeyType: ca.KeyECDSAP256}); err != nil {
		t.Fatal(err)
	}
	winner, _ := otherStore.Load(t.Context())
	store := &racingStore{Store: ca.NewMemoryStore(), competitor: winner}
	c, err := ca.New(t.Context(), ca.Options{Store: store, Clock: fc, KeyType: ca.KeyECDSAP256, RootCertTTL: 100 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	fc.Advance(90 * time.Hour)
	changed, err := c.CheckRootRotation(t.Context())
	if !changed || err != nil {
		t.Fatalf("%v %v", changed, err)
	}
	if !bytes.Equal(c.RootCertPEM(), winner.CACert) {
		t.Fatal("the loser of the update race did not adopt the stored root")
	}
}

func TestRunChecksEveryInterval(t *testing.T) {
	_ = logtest.Capture(t)
	fc := clock.NewFake(epoch)
	c, err := ca.New(t.Context(), ca.Options{Clock: fc, KeyType: ca.KeyECDSAP256, RootCertTTL: 10 * time.Hour,
		RootCertCheckInterval: time.Hour, DisableRootRotatorJitter: true})
	if err != nil {
		t.Fatal(err)
	}
	rotated := make(chan struct{}, 1)
	c.OnRootChange(func() { rotated <- struct{}{} })
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { c.Run(stop); close(done) }()
	for i := 1; i <= 9; i++ {
		fc.BlockUntil(1)
		if w := fc.Waiters(); len(w) != 1 || !w[0].Equal(fc.Now().Add(time.Hour)) {
			t.Fatalf("check %d: waiters %v", i, w)
		}
		fc.Advance(time.Hour)
		if i == 8 { // 8h is 80% of 10h
			<-rotated
		}
	}
	fc.BlockUntil(1)
	select {
	case <-rotated:
		t.Fatal("rotated twice")
	default:
	}
	if !mustRoot(t, c).NotBefore.Equal(epoch.Add(8 * time.Hour)) {
		t.Fatalf("root not rotated at 8h: %v", mustRoot(t, c).NotBefore)
	}
	close(stop)
	<-done
}

func TestRunJitterAndDisabled(t *testing.T) {
	logs := logtest.Capture(t)
	fc := clock.NewFake(epoch)
	c, err := ca.New(t.Context(), ca.Options{Clock: fc, KeyType: ca.KeyECDSAP256})
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { c.Run(stop); close(done) }()
	fc.BlockUntil(1)
	w := fc.Waiters()[0].Sub(epoch)
	if w < 0 || w >= time.Hour || w != w.Truncate(time.Second) {
		t.Fatalf("jitter %v, want whole seconds below the 1h interval", w)
	}
	close(stop)
	<-done
	if len(logs.Lines("INFO", "\trootcertrotator\t", "Jitter is enabled, wait")) != 1 {
		t.Fatalf("jitter line missing:\n%s", logs)
	}
	off, err := ca.New(t.Context(), ca.Options{Clock: fc, KeyType: ca.KeyECDSAP256, RootCertCheckInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	off.Run(make(chan struct{})) // returns at once
}
