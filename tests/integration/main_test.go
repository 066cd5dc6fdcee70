package integration

import (
	"testing"

	"github.com/meshplane/istiod/tests/kube"
)

func TestMain(m *testing.M) { kube.Main(m) }
