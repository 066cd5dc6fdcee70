package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"

	networking "istio.io/api/networking/v1alpha3"
	clientnetworking "istio.io/client-go/pkg/apis/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/meshplane/istiod/pilot/pkg/xds/adsc"
	"github.com/meshplane/istiod/tests/kube"
)

// A ServiceEntry without addresses gets one of each family in its status
// from the leader of istio-ip-autoallocate; a sidecar capturing DNS
// listens on it, one that does not keeps the wildcard; a ServiceEntry
// that declares its own gets none, and one whose resolution becomes NONE
// has its allocated addresses cleared.
func TestServiceEntryAddressesAllocated(t *testing.T) {
	env := kube.Shared(t)
	sys := env.NewNamespace(t, nil).Name
	ns := env.NewNamespace(t, nil).Name
	ctx := context.Background()
	d := startIstiod(t, env, sys)
	ses := env.Istio.NetworkingV1().ServiceEntries(ns)
	entry := func(name string, addrs ...string) *clientnetworking.ServiceEntry {
		return &clientnetworking.ServiceEntry{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: networking.ServiceEntry{Hosts: []string{name + ".example.com"}, Addresses: addrs,
				Ports:      []*networking.ServicePort{{Number: 5432, Name: "tcp", Protocol: "TCP"}},
				Resolution: networking.ServiceEntry_DNS, Location: networking.ServiceEntry_MESH_EXTERNAL}}
	}
	for _, se := range []*clientnetworking.ServiceEntry{entry("db"), entry("own", "10.70.0.1")} {
		if _, err := ses.Create(ctx, se, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	statusOf := func(name string) (string, []string) {
		se, err := ses.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err.Error(), nil
		}
		var out []string
		for _, a := range se.Status.GetAddresses() {
			out = append(out, a.GetHost()+"="+a.GetValue())
		}
		return fmt.Sprint(out), out
	}
	var v4 string
	eventually(t, "addresses allocated", func() (bool, string) {
		s, addrs := statusOf("db")
		if len(addrs) != 2 || !strings.HasPrefix(addrs[0], "db.example.com=240.240.") || !strings.HasPrefix(addrs[1], "db.example.com=2001:2::") {
			return false, s
		}
		v4 = strings.TrimPrefix(addrs[0], "db.example.com=")
		return true, ""
	})
	if s, addrs := statusOf("own"); len(addrs) != 0 {
		t.Errorf("a ServiceEntry with addresses of its own was given %s", s)
	}

	listeners := func(meta map[string]any) map[string]bool {
		cfg := adsc.Config{NodeID: "sidecar~10.80.0.9~client." + ns + "~" + ns + ".svc.cluster.local",
			Metadata: map[string]any{"NAMESPACE": ns, "ISTIO_VERSION": "1.31.0"}}
		for k, v := range meta {
			cfg.Metadata[k] = v
		}
		snap, err := adsc.Fetch(ctx, d.srv.GRPCAddr(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]bool{}
		for name := range snap["lds"] {
			out[name] = true
		}
		return out
	}
	eventually(t, "a DNS-capturing sidecar's listener on the allocated address", func() (bool, string) {
		got := listeners(map[string]any{"DNS_CAPTURE": "true"})
		_, reg := d.get("/debug/registryz")
		i := strings.Index(string(reg), "db.example.com")
		return got[v4+"_5432"] && !got["0.0.0.0_5432"], fmt.Sprint(got) + string(reg[max(0, i-50):min(len(reg), i+900)])
	})
	if got := listeners(nil); !got["0.0.0.0_5432"] || got[v4+"_5432"] {
		t.Errorf("a sidecar not capturing DNS: %v, want 0.0.0.0_5432", got)
	}

	cur, err := ses.Get(ctx, "db", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cur.Spec.Resolution = networking.ServiceEntry_NONE
	if _, err := ses.Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "addresses cleared", func() (bool, string) {
		s, addrs := statusOf("db")
		return len(addrs) == 0, s
	})
}
