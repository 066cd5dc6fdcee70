package inject_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/meshplane/istiod/pkg/diag"
	"github.com/meshplane/istiod/pkg/kube/inject"
)

func injectorCM(config string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "istio-sidecar-injector", Namespace: "istio-system"},
		Data:       map[string]string{"config": config, "values": `{"global":{"hub":"h"}}`},
	}
}

const goodConfig = "policy: enabled\ntemplates:\n  sidecar: |\n    spec: {}\n"

func TestWatcherKeepsLastGood(t *testing.T) {
	w := inject.NewWatcher("istio-system/istio-sidecar-injector")
	w.Update(injectorCM(goodConfig))
	first := w.Config()
	if first == nil || len(w.Problems()) != 0 {
		t.Fatalf("good config: %v, problems %v", first, w.Problems())
	}
	for name, cm := range map[string]*corev1.ConfigMap{
		"broken YAML":     injectorCM("policy: [enabled\n"),
		"broken template": injectorCM("templates:\n  sidecar: '{{ if }'\n"),
		"unknown func":    injectorCM("templates:\n  sidecar: '{{ nosuchfunc }}'\n"),
		"missing key":     {ObjectMeta: metav1.ObjectMeta{Name: "istio-sidecar-injector"}, Data: map[string]string{"config": goodConfig}},
		"deleted":         nil,
	} {
		w.Update(cm)
		if w.Config() != first {
			t.Errorf("%s: the last good config was replaced", name)
		}
		ps := w.Problems()
		if len(ps) != 1 || ps[0].Severity != diag.Error || ps[0].Source != inject.ProblemSource ||
			!strings.Contains(ps[0].Message, "keeping the last good injection config") {
			t.Errorf("%s: problems %+v", name, ps)
		}
	}
	w.Update(injectorCM(goodConfig))
	if w.Config() == first || len(w.Problems()) != 0 {
		t.Errorf("a good version must replace the config and clear the problems: %v", w.Problems())
	}
}

func TestWatcherWarnings(t *testing.T) {
	w := inject.NewWatcher("x")
	w.Update(injectorCM("policy: sometimes\ndefaultTemplates: [nope]\ntemplates:\n  sidecar: x\n"))
	ps := w.Problems()
	if w.Config() == nil || len(ps) != 2 {
		t.Fatalf("config %v problems %+v", w.Config(), ps)
	}
	for _, p := range ps {
		if p.Severity != diag.Warning {
			t.Errorf("%+v", p)
		}
	}
}

// TestWatchConfigMap follows a ConfigMap through a client: absent, created,
// broken, fixed.
func TestWatchConfigMap(t *testing.T) {
	client := fake.NewClientset()
	stop := make(chan struct{})
	defer close(stop)
	w, err := inject.WatchConfigMap(client, "istio-system", "istio-sidecar-injector", stop)
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "synced", w.HasSynced)
	if w.Config() != nil || len(w.Problems()) != 1 || !strings.Contains(w.Problems()[0].Message, "does not exist") {
		t.Fatalf("absent: %v %+v", w.Config(), w.Problems())
	}
	cms := client.CoreV1().ConfigMaps("istio-system")
	ctx := context.Background()
	if _, err := cms.Create(ctx, injectorCM(goodConfig), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "config read", func() bool { return w.Config() != nil })
	good := w.Config()
	if _, err := cms.Update(ctx, injectorCM("templates: {sidecar: '{{'}"), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "problem listed", func() bool { return len(w.Problems()) == 1 })
	if w.Config() != good {
		t.Error("broken version replaced the config")
	}
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting: %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
