package app

import (
	"testing"

	"github.com/meshplane/istiod/pilot/pkg/bootstrap"
)

// PILOT_ENABLE_MONGO_FILTER is on unless set false; the Redis and MySQL
// filters are off unless set true, as in Istio; a bad value is an error.
func TestProtocolFiltersFromEnv(t *testing.T) {
	a := bootstrap.DefaultArgs()
	if err := argsFromEnv(&a); err != nil {
		t.Fatal(err)
	}
	if a.NoMongoFilter || a.RedisFilter || a.MySQLFilter {
		t.Errorf("defaults: noMongo=%v redis=%v mysql=%v", a.NoMongoFilter, a.RedisFilter, a.MySQLFilter)
	}
	t.Setenv("PILOT_ENABLE_MONGO_FILTER", "false")
	t.Setenv("PILOT_ENABLE_REDIS_FILTER", "true")
	t.Setenv("PILOT_ENABLE_MYSQL_FILTER", "1")
	a = bootstrap.DefaultArgs()
	if err := argsFromEnv(&a); err != nil {
		t.Fatal(err)
	}
	if !a.NoMongoFilter || !a.RedisFilter || !a.MySQLFilter {
		t.Errorf("set: noMongo=%v redis=%v mysql=%v", a.NoMongoFilter, a.RedisFilter, a.MySQLFilter)
	}
	t.Setenv("PILOT_ENABLE_REDIS_FILTER", "yes please")
	if err := argsFromEnv(&a); err == nil {
		t.Error("a bad PILOT_ENABLE_REDIS_FILTER is accepted")
	}
}

// The idle heap goes back to the OS after push bursts unless
// ISTIOD_RELEASE_IDLE_MEMORY says false.
func TestIdleMemoryReleaseFromEnv(t *testing.T) {
	a := bootstrap.DefaultArgs()
	if err := argsFromEnv(&a); err != nil || a.KeepIdleMemory {
		t.Fatalf("default: keep=%v, %v", a.KeepIdleMemory, err)
	}
	t.Setenv("ISTIOD_RELEASE_IDLE_MEMORY", "false")
	a = bootstrap.DefaultArgs()
	if err := argsFromEnv(&a); err != nil || !a.KeepIdleMemory {
		t.Errorf("ISTIOD_RELEASE_IDLE_MEMORY=false: keep=%v, %v", a.KeepIdleMemory, err)
	}
}
