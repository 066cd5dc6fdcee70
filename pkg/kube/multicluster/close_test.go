package multicluster

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/meshplane/istiod/pkg/kube"
)

// closeCounting is a client that counts its Close calls.
type closeCounting struct {
	kube.Client
	closed atomic.Int32
}

func (c *closeCounting) Close() {
	c.closed.Add(1)
	c.Client.Close()
}

// A cluster's client is closed when the cluster stops: the old client
// once a rotation's new one synced, the client of a cluster removed, and
// every client when the controller stops; never a client that serves.
func TestStoppedClustersCloseTheirClients(t *testing.T) {
	f := newFixture(t, 0)
	clients := map[*closeCounting]string{}
	var built []*closeCounting
	f.ctl.opts.BuildClient = func(kubeconfig []byte, id string) (kube.Client, error) {
		c := &closeCounting{Client: kube.NewFakeClient()}
		built = append(built, c) // calls come one at a time
		clients[c] = id + " " + string(kubeconfig)
		return c, nil
	}
	closedOf := func(c kube.Client) int32 { return c.(*closeCounting).closed.Load() }
	f.writeSecret("remote", map[string]string{"cluster2": "k2", "cluster3": "k3"})
	f.awaitClusters("cluster2=synced,cluster3=synced")
	first2, first3 := f.ctl.Cluster("cluster2").Client, f.ctl.Cluster("cluster3").Client

	f.writeSecret("remote", map[string]string{"cluster2": "k2-rotated", "cluster3": "k3"})
	f.await("the rotated cluster's old client closed", func() (bool, string) {
		cur := f.ctl.Cluster("cluster2")
		return cur != nil && cur.Client != first2 && cur.SyncStatus() == SyncStatusSynced && closedOf(first2) == 1, ""
	})
	rotated := f.ctl.Cluster("cluster2").Client
	if closedOf(rotated) != 0 || closedOf(first3) != 0 {
		t.Fatalf("serving clients closed: rotated %d, cluster3 %d", closedOf(rotated), closedOf(first3))
	}

	f.writeSecret("remote", map[string]string{"cluster2": "k2-rotated"})
	f.awaitClusters("cluster2=synced")
	if closedOf(first3) != 1 {
		t.Fatalf("the removed cluster's client closed %d times", closedOf(first3))
	}
	if err := f.local.Kube().CoreV1().Secrets("istio-system").Delete(context.Background(), "remote", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	f.awaitClusters("")
	f.await("every client closed once", func() (bool, string) {
		for _, c := range built {
			if c.closed.Load() != 1 {
				return false, clients[c]
			}
		}
		return true, ""
	})
	time.Sleep(50 * time.Millisecond)
	if n := len(built); n != 3 {
		t.Errorf("%d clients built", n)
	}
}
