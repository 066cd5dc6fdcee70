package deployment

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

func sa(rv, note string) *corev1.ServiceAccount {
	return &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "sa", ResourceVersion: rv,
		Annotations: map[string]string{"note": note}}}
}

// The newer of the informer's object and the one written wins; once the
// informer has caught up the written one is forgotten, and an object the
// informer no longer has is absent.
func TestObjectCache(t *testing.T) {
	store := cache.NewStore(cache.MetaNamespaceKeyFunc)
	_ = store.Add(sa("5", "informer"))
	c := newObjectCache(store)
	c.wrote(sa("7", "written"))
	note := func() string {
		o := c.get("ns/sa")
		if o == nil {
			return "<nil>"
		}
		return o.(*corev1.ServiceAccount).Annotations["note"]
	}
	if got := note(); got != "written" {
		t.Errorf("before the informer caught up: %s", got)
	}
	_ = store.Update(sa("7", "informer"))
	if got := note(); got != "informer" || len(c.written) != 0 {
		t.Errorf("after: %s, %d written kept", got, len(c.written))
	}
	c.wrote(sa("9", "written"))
	_ = store.Delete(sa("7", ""))
	if got := note(); got != "<nil>" || len(c.written) != 0 {
		t.Errorf("deleted: %s, %d written kept", got, len(c.written))
	}
}
