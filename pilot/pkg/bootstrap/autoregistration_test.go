package bootstrap_test

import (
	"strings"
	"testing"
	"time"

	"github.com/meshplane/istiod/pilot/pkg/bootstrap"
)

func TestAutoRegistrationFromEnv(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	o := bootstrap.DefaultArgs().AutoRegistration
	if !o.Enabled || !o.HealthChecks || !o.ValidateIdentity || o.GracePeriod != 10*time.Second {
		t.Fatalf("defaults %+v, want Istio's", o)
	}
	if err := bootstrap.AutoRegistrationFromEnv(env(map[string]string{
		"PILOT_ENABLE_WORKLOAD_ENTRY_AUTOREGISTRATION": "false",
		"PILOT_ENABLE_WORKLOAD_ENTRY_HEALTHCHECKS":     "0",
		"ISTIO_WORKLOAD_ENTRY_VALIDATE_IDENTITY":       "false",
		"PILOT_WORKLOAD_ENTRY_GRACE_PERIOD":            "3s",
	}), &o); err != nil {
		t.Fatal(err)
	}
	if o.Enabled || o.HealthChecks || o.ValidateIdentity || o.GracePeriod != 3*time.Second {
		t.Fatalf("from the environment: %+v", o)
	}
	for k, v := range map[string]string{"PILOT_ENABLE_WORKLOAD_ENTRY_HEALTHCHECKS": "maybe", "PILOT_WORKLOAD_ENTRY_GRACE_PERIOD": "-1s"} {
		err := bootstrap.AutoRegistrationFromEnv(env(map[string]string{k: v}), &o)
		if err == nil || !strings.Contains(err.Error(), k) {
			t.Errorf("%s=%s: %v, want an error naming it", k, v, err)
		}
	}
}
