package differential_test

import (
	"testing"

	"github.com/meshplane/istiod/tests/differential"
)

func TestMain(m *testing.M) { differential.Main(m) }
