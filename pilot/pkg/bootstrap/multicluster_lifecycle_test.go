//go:build linux

package bootstrap

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/meshplane/istiod/pkg/kube"
	"github.com/meshplane/istiod/pkg/kube/leaderelection"
	"github.com/meshplane/istiod/pkg/kube/multicluster"
)

// krtzNames lists /debug/krtz's collections by name (with repeats).
func krtzNames(s *Server) []string {
	var out []string
	for _, c := range s.krtDebug.Snapshot() {
		out = append(out, c.Name)
	}
	return out
}

// Remote clusters' collections leave /debug/krtz with their cluster: once
// the remote secret is rotated and then deleted, the listing is what it
// was before the secret existed (it held one collection of each removed
// cluster, the Gateway API input of its registry, which does not stop
// with the cluster).
func TestRemovedClustersLeaveKrtz(t *testing.T) {
	local := kube.NewFakeClient(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "istio-system"}})
	args := tempArgs(t)
	args.Multicluster.BuildClient = func([]byte, string) (kube.Client, error) {
		return kube.NewFakeClient(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "istio-system"}}), nil
	}
	s, err := newServerWithClient(args, local)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Shutdown)
	poll(t, "synced", time.Minute, func() (bool, string) { return s.HasSynced(), "" })
	before := krtzNames(s)
	secrets := local.Kube().CoreV1().Secrets(args.Namespace)
	ctx := context.Background()
	if _, err := secrets.Create(ctx, remoteSecret("remote-00", args.Namespace, 1), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var first *multicluster.Cluster
	poll(t, "the remote cluster synced", time.Minute, func() (bool, string) {
		first = s.multicluster.Cluster("remote-00")
		return first != nil && first.SyncStatus() == multicluster.SyncStatusSynced, fmt.Sprint(s.multicluster.Clusters())
	})
	with := krtzNames(s)
	if len(with) <= len(before) {
		t.Fatalf("the remote cluster lists no collections: %d with, %d before", len(with), len(before))
	}
	if _, err := secrets.Update(ctx, remoteSecret("remote-00", args.Namespace, 2), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	poll(t, "the rotated cluster's old collections gone", time.Minute, func() (bool, string) {
		cur := s.multicluster.Cluster("remote-00")
		got := krtzNames(s)
		return cur != first && first.SyncStatus() == multicluster.SyncStatusClosed && slices.Equal(got, with),
			fmt.Sprintf("%d collections, %d with one cluster", len(got), len(with))
	})
	if err := secrets.Delete(ctx, "istio-remote-secret-remote-00", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	poll(t, "the removed cluster's collections gone", time.Minute, func() (bool, string) {
		got := krtzNames(s)
		return len(s.multicluster.Clusters()) == 0 && slices.Equal(got, before),
			fmt.Sprintf("%d collections, %d before the cluster: extra %v", len(got), len(before), extra(got, before))
	})
}

// extra is what got lists more than want.
func extra(got, want []string) []string {
	left := slices.Clone(want)
	var out []string
	for _, n := range got {
		if i := slices.Index(left, n); i >= 0 {
			left = slices.Delete(left, i, i+1)
			continue
		}
		out = append(out, n)
	}
	return out
}

// ENABLE_LEADER_ELECTION=false: the leader-elected controllers run (the
// namespace controller publishes the root) and no lock exists, neither a
// Lease nor a ConfigMap lock.
func TestLeaderElectionDisabledWiring(t *testing.T) {
	local := kube.NewFakeClient(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "istio-system"}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "app"}})
	args := tempArgs(t)
	args.Security.LeaderElection.Disabled = true
	s, err := newServerWithClient(args, local)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Shutdown)
	ctx := context.Background()
	poll(t, "the root published in namespace app", time.Minute, func() (bool, string) {
		_, err := local.Kube().CoreV1().ConfigMaps("app").Get(ctx, "istio-ca-root-cert", metav1.GetOptions{})
		return err == nil, fmt.Sprint(err)
	})
	if !s.secure.election.IsLeader() {
		t.Error("the namespace controller's election does not lead")
	}
	time.Sleep(200 * time.Millisecond) // the other controllers started meanwhile
	leases, err := local.Kube().CoordinationV1().Leases("").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range leases.Items {
		t.Errorf("Lease %s/%s with the election disabled", l.Namespace, l.Name)
	}
	cms, err := local.Kube().CoreV1().ConfigMaps("").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, cm := range cms.Items {
		if _, ok := cm.Annotations[leaderelection.RecordAnnotation]; ok {
			t.Errorf("ConfigMap lock %s/%s with the election disabled", cm.Namespace, cm.Name)
		}
	}
}
