package bootstrap

import (
	"testing"
)

// The annotation's entries are compared exactly, as Istio compares them.
func TestControlsCluster(t *testing.T) {
	for _, tc := range []struct {
		annotation string
		want       bool
	}{
		{"", false},
		{"cluster1", true},
		{"*", true},
		{"cluster2,cluster1", true},
		{"cluster2,*", true},
		{"cluster2", false},
		{"cluster2, cluster1", false},
		{"Cluster1", false},
		{"cluster1-east", false},
	} {
		if got := controlsCluster(tc.annotation, "cluster1"); got != tc.want {
			t.Errorf("controlsCluster(%q, cluster1) = %v, want %v", tc.annotation, got, tc.want)
		}
	}
}

func TestExternalIstiodFromEnv(t *testing.T) {
	env := map[string]string{}
	getenv := func(k string) string { return env[k] }
	o := DefaultMulticlusterOptions()
	if err := MulticlusterFromEnv(getenv, &o); err != nil || o.ExternalIstiod {
		t.Fatalf("unset: %v, %v", o.ExternalIstiod, err)
	}
	env["EXTERNAL_ISTIOD"] = "true"
	if err := MulticlusterFromEnv(getenv, &o); err != nil || !o.ExternalIstiod {
		t.Fatalf("true: %v, %v", o.ExternalIstiod, err)
	}
	env["EXTERNAL_ISTIOD"] = "yes"
	if err := MulticlusterFromEnv(getenv, &o); err == nil || err.Error() != `EXTERNAL_ISTIOD="yes": want a boolean` {
		t.Fatalf("yes: %v", err)
	}
}
