package workloadapi_test

import (
	"encoding/json"
	"os"
	"reflect"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/meshplane/istiod/pkg/workloadapi"
	"github.com/meshplane/istiod/pkg/workloadapi/security"
	"github.com/meshplane/istiod/tests/refdata"
)

// wds is ../shared/reference/ambient/real/wds.json: what Istio's istiod sent
// a ztunnel, each resource as protojson with proto field names, by resource
// name, and the number of responses per type URL.
type wds struct {
	Address       map[string]json.RawMessage `json:"Address"`
	Authorization map[string]json.RawMessage `json:"Authorization"`
	Responses     map[string]int             `json:"responses"`
}

// TestDecodesIstioWorkloadAPI decodes every resource Istio's istiod sent a
// ztunnel into our messages, rejecting unknown fields, and encodes it back:
// the JSON must come out equal (nothing lost, nothing renamed), and the
// binary encoding must survive a round trip. The type URLs of the recorded
// responses must be those of our messages.
func TestDecodesIstioWorkloadAPI(t *testing.T) {
	raw, err := os.ReadFile(refdata.Dir(t, "ambient/real/wds.json"))
	if err != nil {
		t.Fatal(err)
	}
	var ref wds
	if err := json.Unmarshal(raw, &ref); err != nil {
		t.Fatalf("wds.json: %v", err)
	}
	if len(ref.Address) == 0 || len(ref.Authorization) == 0 {
		t.Fatalf("wds.json holds %d Address and %d Authorization resources; want some of each",
			len(ref.Address), len(ref.Authorization))
	}

	addressURL := "type.googleapis.com/" + string(proto.MessageName(&workloadapi.Address{}))
	authzURL := "type.googleapis.com/" + string(proto.MessageName(&security.Authorization{}))
	for url := range ref.Responses {
		if url != addressURL && url != authzURL {
			t.Errorf("wds.json has responses of %s; our types are %s and %s", url, addressURL, authzURL)
		}
	}

	var workloads, services int
	for name, js := range ref.Address {
		a := &workloadapi.Address{}
		roundTrip(t, "Address "+name, js, a)
		switch {
		case a.GetWorkload() != nil:
			workloads++
			if uid := a.GetWorkload().GetUid(); uid != name {
				t.Errorf("Address %s: the workload's uid is %q; a workload's resource name is its uid", name, uid)
			}
		case a.GetService() != nil:
			services++
			if want := a.GetService().GetNamespace() + "/" + a.GetService().GetHostname(); want != name {
				t.Errorf("Address %s: a service's resource name is namespace/hostname, %s", name, want)
			}
		default:
			t.Errorf("Address %s: neither a workload nor a service", name)
		}
	}
	if workloads == 0 || services == 0 {
		t.Errorf("decoded %d workloads and %d services; want some of each", workloads, services)
	}
	for name, js := range ref.Authorization {
		a := &security.Authorization{}
		roundTrip(t, "Authorization "+name, js, a)
		if want := a.GetNamespace() + "/" + a.GetName(); want != name {
			t.Errorf("Authorization %s: a policy's resource name is namespace/name, %s", name, want)
		}
	}
}

// roundTrip decodes js into m (unknown fields are errors), encodes m back
// with proto field names and compares the two as JSON values, then checks
// that the binary encoding of m decodes to an equal message.
func roundTrip(t *testing.T, what string, js []byte, m proto.Message) {
	t.Helper()
	if err := (protojson.UnmarshalOptions{DiscardUnknown: false}).Unmarshal(js, m); err != nil {
		t.Errorf("%s: decoding: %v", what, err)
		return
	}
	out, err := protojson.MarshalOptions{UseProtoNames: true}.Marshal(m)
	if err != nil {
		t.Errorf("%s: encoding: %v", what, err)
		return
	}
	var want, got any
	if err := json.Unmarshal(js, &want); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%s: re-encoded JSON: %v", what, err)
	}
	if !reflect.DeepEqual(want, got) {
		t.Errorf("%s: re-encoding changed the resource\nIstio's: %s\nours:    %s", what, js, out)
	}

	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		t.Errorf("%s: binary encoding: %v", what, err)
		return
	}
	back := m.ProtoReflect().New().Interface()
	if err := proto.Unmarshal(b, back); err != nil {
		t.Errorf("%s: binary decoding: %v", what, err)
		return
	}
	if !proto.Equal(m, back) {
		t.Errorf("%s: the binary round trip changed the message", what)
	}
}
