package model

import (
	"strings"

	networking "istio.io/api/networking/v1alpha3"
)

// DestinationRuleCredentials are the SDS resource names of the Secrets
// that the DestinationRules a proxy sees name as credentialName for TLS
// origination (top level, port level, subsets), with their -cacert
// companions: kubernetes://<name> and kubernetes://<name>-cacert. The
// proxy's clusters ask istiod for these over SDS.
func (p *PushContext) DestinationRuleCredentials(proxy *Proxy) map[string]bool {
	out := map[string]bool{}
	add := func(tls *networking.ClientTLSSettings) {
		name := tls.GetCredentialName()
		if name == "" {
			return
		}
		if !strings.Contains(name, "://") {
			name = "kubernetes://" + name
		}
		out[name], out[name+"-cacert"] = true, true
	}
	policy := func(tp *networking.TrafficPolicy) {
		add(tp.GetTls())
		for _, pl := range tp.GetPortLevelSettings() {
			add(pl.GetTls())
		}
	}
	for _, drs := range p.SidecarScope(proxy).destinationRules {
		for _, dr := range drs {
			spec := dr.Spec()
			policy(spec.GetTrafficPolicy())
			for _, s := range spec.GetSubsets() {
				policy(s.GetTrafficPolicy())
			}
		}
	}
	return out
}

// DestinationRulesReferenceSecret reports whether a DestinationRule the
// proxy sees names Secret namespace/name (or its -cacert form) as
// credentialName; only Secrets of the proxy's namespace are served to it.
func (p *PushContext) DestinationRulesReferenceSecret(proxy *Proxy, namespace, name string) bool {
	if namespace != proxy.ConfigNamespace {
		return false
	}
	creds := p.DestinationRuleCredentials(proxy)
	return creds["kubernetes://"+name] || creds["kubernetes://"+strings.TrimSuffix(name, "-cacert")]
}
