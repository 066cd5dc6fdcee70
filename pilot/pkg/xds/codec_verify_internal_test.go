package xds

import (
	"strings"
	"testing"

	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
)

// A cached resource changed after its encoding was made would go out as
// the old bytes: the check catches it, and an unchanged one passes.
func TestCodecVerifiesCachedEncodings(t *testing.T) {
	// make test sets the xdsverify tag for every package; this test checks
	// the check itself, whatever the tags (benchmarks measure without it)
	defer func(v bool) { verifyEncoding = v }(verifyEncoding)
	verifyEncoding = true
	c := testCodec()
	enc := c.enc
	res := enc.NewResource(ClusterType, "outbound|80||a.example", make([]byte, 2*inlineBelow))
	resp := &discovery.DeltaDiscoveryResponse{TypeUrl: ClusterType, Nonce: "n", Resources: []*discovery.Resource{res}}
	if _, err := c.Marshal(resp); err != nil {
		t.Fatalf("an unchanged resource: %v", err)
	}
	res.Name = "outbound|80||b.example" // changed in place, after caching
	_, err := c.Marshal(resp)
	if err == nil || !strings.Contains(err.Error(), "changed after it was encoded") {
		t.Fatalf("a resource changed after caching was sent as its stale encoding (err %v)", err)
	}
	// without the check, the stale bytes go out: this is what it guards
	verifyEncoding = false
	if _, err := c.Marshal(resp); err != nil {
		t.Fatalf("unchecked: %v", err)
	}
}
