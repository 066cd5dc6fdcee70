package bootstrap

import "testing"

// RESOLVE_HOSTNAME_GATEWAYS and PILOT_MULTI_NETWORK_DISCOVER_GATEWAY_API
// are on unless set false, as in Istio; a value that does not parse is an
// error naming the variable.
func TestMulticlusterNetworkSwitchesFromEnv(t *testing.T) {
	o := DefaultMulticlusterOptions()
	if !o.ResolveHostnameGateways || !o.DiscoverGatewayAPINetworks {
		t.Fatalf("defaults: resolve %v, discover %v", o.ResolveHostnameGateways, o.DiscoverGatewayAPINetworks)
	}
	env := map[string]string{"RESOLVE_HOSTNAME_GATEWAYS": "false", "PILOT_MULTI_NETWORK_DISCOVER_GATEWAY_API": "0"}
	if err := MulticlusterFromEnv(func(k string) string { return env[k] }, &o); err != nil {
		t.Fatal(err)
	}
	if o.ResolveHostnameGateways || o.DiscoverGatewayAPINetworks {
		t.Errorf("set false: resolve %v, discover %v", o.ResolveHostnameGateways, o.DiscoverGatewayAPINetworks)
	}
	env = map[string]string{"RESOLVE_HOSTNAME_GATEWAYS": "nope"}
	if err := MulticlusterFromEnv(func(k string) string { return env[k] }, &o); err == nil || err.Error() != `RESOLVE_HOSTNAME_GATEWAYS="nope": want a boolean` {
		t.Errorf("bad value: %v", err)
	}
}
