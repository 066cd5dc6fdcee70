package crd_test

import (
	"strings"
	"testing"

	"github.com/meshplane/istiod/pilot/pkg/config/kube/crd"
)

// A syntax error in a document that starts mid-file is reported at its line
// in the file, and so is the document's start.
func TestYAMLErrorLinesCountFromTheFile(t *testing.T) {
	input := `# routing for reviews
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: reviews, namespace: bookinfo}
spec:
  host: reviews
---

---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata:
  name: reviews
  namespace: bookinfo
spec:
  hosts: [reviews]
  http:
  - route:
    - destination:
        host: reviews
      weight: 100: 2
`
	docs := crd.Parse([]byte(input), crd.Options{})
	if len(docs) != 2 {
		t.Fatalf("got %d documents", len(docs))
	}
	if docs[0].Err != nil || docs[0].Line != 1 {
		t.Errorf("first document: line %d, %v", docs[0].Line, docs[0].Err)
	}
	d := docs[1]
	if d.Line != 10 {
		t.Errorf("broken document starts at line %d, want 10", d.Line)
	}
	want := "invalid YAML: line 21: mapping values are not allowed in this context"
	if d.Err == nil || d.Err.Error() != want {
		t.Errorf("error %v, want %q", d.Err, want)
	}
	if !strings.Contains(strings.Split(input, "\n")[20], "weight: 100: 2") {
		t.Fatal("test input: line 21 is not the broken one")
	}
}
