package deployment

import (
	"encoding/json"
	"testing"
)

func decodeJSON(t *testing.T, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func TestSubset(t *testing.T) {
	cases := []struct {
		name, want, have string
		ok               bool
	}{
		{"defaults and other fields in the cluster", `{"a":1,"b":{"c":"x"}}`, `{"a":1,"b":{"c":"x","d":2},"e":true}`, true},
		{"a changed value", `{"a":1}`, `{"a":2}`, false},
		{"a missing field", `{"a":{"b":1}}`, `{"a":{}}`, false},
		{"null sets nothing", `{"a":null}`, `{}`, true},
		{"scalar lists are atomic", `{"args":["a","b"]}`, `{"args":["a","b","c"]}`, false},
		{"scalar lists in order", `{"args":["a","b"]}`, `{"args":["b","a"]}`, false},
		{"object lists by element", `{"env":[{"name":"A","value":"1"}]}`, `{"env":[{"name":"B"},{"name":"A","value":"1"}]}`, true},
		{"an element changed", `{"env":[{"name":"A","value":"1"}]}`, `{"env":[{"name":"A","value":"2"}]}`, false},
		{"an element removed", `{"env":[{"name":"A"},{"name":"B"}]}`, `{"env":[{"name":"A"}]}`, false},
	}
	for _, tc := range cases {
		if got := subset(decodeJSON(t, tc.want), decodeJSON(t, tc.have)); got != tc.ok {
			t.Errorf("%s: subset = %v, want %v", tc.name, got, tc.ok)
		}
	}
	if !subset(map[string]any{"port": int64(80)}, map[string]any{"port": float64(80)}) {
		t.Error("numbers of different Go types differ")
	}
}

func TestStillApplied(t *testing.T) {
	obj := decodeJSON(t, `{"metadata":{"labels":{"a":"1"}},"spec":{"ports":[{"port":80,"protocol":"TCP","name":"http"}],
		"finalizers":["x"],"list":["p","q"]}}`)
	cases := []struct {
		name, fields string
		ok           bool
	}{
		{"fields present", `{"f:metadata":{"f:labels":{"f:a":{}}},"f:spec":{"f:ports":{".":{},"k:{\"port\":80,\"protocol\":\"TCP\"}":{"f:name":{}}}}}`, true},
		{"a label no longer rendered", `{"f:metadata":{"f:labels":{"f:b":{}}}}`, false},
		{"a port no longer rendered", `{"f:spec":{"f:ports":{"k:{\"port\":443,\"protocol\":\"TCP\"}":{}}}}`, false},
		{"a field of an element gone", `{"f:spec":{"f:ports":{"k:{\"port\":80,\"protocol\":\"TCP\"}":{"f:appProtocol":{}}}}}`, false},
		{"set values", `{"f:spec":{"f:finalizers":{"v:\"x\"":{}}}}`, true},
		{"a set value gone", `{"f:spec":{"f:finalizers":{"v:\"y\"":{}}}}`, false},
		{"indexes", `{"f:spec":{"f:list":{"i:1":{}}}}`, true},
		{"an index gone", `{"f:spec":{"f:list":{"i:2":{}}}}`, false},
	}
	for _, tc := range cases {
		if got := stillApplied(decodeJSON(t, tc.fields).(map[string]any), obj); got != tc.ok {
			t.Errorf("%s: stillApplied = %v, want %v", tc.name, got, tc.ok)
		}
	}
}
