package namespacecontroller_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	nc "github.com/meshplane/istiod/pkg/kube/namespacecontroller"
)

func ns(name string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
}

func waitFor(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		ok, detail := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s: %s", what, detail)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func rootIn(client *fake.Clientset, namespace string) (string, bool) {
	cm, err := client.CoreV1().ConfigMaps(namespace).Get(context.Background(), nc.RootCertConfigMap, metav1.GetOptions{})
	if err != nil {
		return "", false
	}
	return cm.Data[nc.RootCertKey], cm.Labels[nc.ConfigLabel] == "true"
}

// Every served namespace gets both ConfigMaps, in Istio's shape; deleted or
// edited ones are rewritten, a new root reaches them all, a namespace the
// filter excludes gets none, and nothing unchanged is rewritten.
func TestRootCertConfigMaps(t *testing.T) {
	client := fake.NewClientset(ns("bookinfo"), ns("default"), ns("hidden"), ns("kube-system"), ns("kube-public"), ns("kube-node-lease"), ns("local-path-storage"))
	var writes atomic.Int64
	client.PrependReactor("*", "configmaps", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetVerb() == "create" || a.GetVerb() == "update" {
			writes.Add(1)
		}
		return false, nil, nil
	})
	c := nc.New(client, nc.Options{Root: []byte("ROOT-1\n"), Filter: func(n string) bool { return n != "hidden" }})
	stop := make(chan struct{})
	defer close(stop)
	go c.Run(stop)
	// kube-system is served (ztunnel may run there), Kubernetes' other
	// namespaces are not, as in Istio
	for _, n := range []string{"bookinfo", "default", "kube-system"} {
		waitFor(t, n+" root", func() (bool, string) {
			root, labelled := rootIn(client, n)
			return root == "ROOT-1\n" && labelled, root
		})
		waitFor(t, n+" crl", func() (bool, string) {
			cm, err := client.CoreV1().ConfigMaps(n).Get(context.Background(), nc.CRLConfigMap, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			v, ok := cm.Data[nc.CRLKey]
			return ok && v == "" && len(cm.Data) == 1 && cm.Labels[nc.ConfigLabel] == "true", cm.String()
		})
	}
	if _, err := client.CoreV1().ConfigMaps("hidden").Get(context.Background(), nc.RootCertConfigMap, metav1.GetOptions{}); err == nil {
		t.Error("a namespace the filter excludes got the root")
	}
	for _, n := range []string{"kube-public", "kube-node-lease", "local-path-storage"} {
		if _, err := client.CoreV1().ConfigMaps(n).Get(context.Background(), nc.RootCertConfigMap, metav1.GetOptions{}); err == nil {
			t.Errorf("%s got the root", n)
		}
	}
	// a new namespace gets it at once
	if _, err := client.CoreV1().Namespaces().Create(context.Background(), ns("created-later"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "new namespace", func() (bool, string) { r, _ := rootIn(client, "created-later"); return r == "ROOT-1\n", r })

	// deleted: rewritten
	if err := client.CoreV1().ConfigMaps("bookinfo").Delete(context.Background(), nc.RootCertConfigMap, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "deleted root rewritten", func() (bool, string) { r, _ := rootIn(client, "bookinfo"); return r == "ROOT-1\n", r })
	// edited: rewritten
	cm, _ := client.CoreV1().ConfigMaps("default").Get(context.Background(), nc.RootCertConfigMap, metav1.GetOptions{})
	cm.Data[nc.RootCertKey] = "tampered"
	if _, err := client.CoreV1().ConfigMaps("default").Update(context.Background(), cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "edited root restored", func() (bool, string) { r, _ := rootIn(client, "default"); return r == "ROOT-1\n", r })

	// nothing unchanged is rewritten, even when everything is rechecked;
	// first let the informer see the controller's own last write (until it
	// has, a recheck still sees the tampered copy and rightly rewrites it)
	for quiet := writes.Load(); ; {
		time.Sleep(300 * time.Millisecond)
		n := writes.Load()
		if n == quiet {
			break
		}
		quiet = n
	}
	before := writes.Load()
	c.ResyncAll()
	time.Sleep(200 * time.Millisecond) // a rewrite would be immediate; none may come
	if n := writes.Load() - before; n != 0 {
		t.Errorf("%d writes of unchanged ConfigMaps", n)
	}
	// a new root reaches every namespace
	c.SetRoot([]byte("ROOT-2\n"))
	for _, n := range []string{"bookinfo", "default", "created-later"} {
		waitFor(t, n+" new root", func() (bool, string) { r, _ := rootIn(client, n); return r == "ROOT-2\n", r })
	}
}

// A replica that loses leadership and wins it again writes again: each
// leadership term runs the controller afresh.
func TestRunsAgainAfterLeadershipReturns(t *testing.T) {
	client := fake.NewClientset(ns("bookinfo"))
	c := nc.New(client, nc.Options{Root: []byte("ROOT\n")})
	for term := 0; term < 2; term++ {
		stop := make(chan struct{})
		done := make(chan struct{})
		go func() {
			c.Run(stop)
			close(done)
		}()
		waitFor(t, fmt.Sprintf("term %d writes", term), func() (bool, string) { r, _ := rootIn(client, "bookinfo"); return r == "ROOT\n", r })
		close(stop)
		<-done
		if err := client.CoreV1().ConfigMaps("bookinfo").Delete(context.Background(), nc.RootCertConfigMap, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}
