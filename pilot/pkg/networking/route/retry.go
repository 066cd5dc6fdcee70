package route

import (
	"strconv"
	"strings"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	previouspriorities "github.com/envoyproxy/go-control-plane/envoy/extensions/retry/priority/previous_priorities/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/meshplane/istiod/pkg/protoconv"
)

const defaultRetryOn = "connect-failure,refused-stream,unavailable,cancelled,retriable-status-codes"

// retryPolicy converts a route's retries as Istio does: none set means the
// mesh's defaultHttpRetryPolicy, else Istio's default (2 attempts on
// connection failures); attempts 0 disables retries. A consistent-hash
// destination keeps retrying the host it hashes to: no previous-hosts
// predicate unless retryIgnorePreviousHosts asks for it. Status codes in
// retryOn become retriable status codes.
func retryPolicy(in, meshDefault *networking.HTTPRetry, hashed bool) *routev3.RetryPolicy {
	if in == nil {
		in = meshDefault
	}
	if in == nil {
		return baseRetry(hashed)
	}
	if in.Attempts <= 0 {
		return nil
	}
	out := baseRetry(hashed)
	out.NumRetries = wrapperspb.UInt32(uint32(in.Attempts))
	if in.RetryOn != "" {
		out.RetryOn, out.RetriableStatusCodes = parseRetryOn(in.RetryOn)
		if len(out.RetriableStatusCodes) > 0 && !strings.Contains(out.RetryOn, "retriable-status-codes") {
			out.RetryOn += ",retriable-status-codes"
		}
	}
	if in.PerTryTimeout != nil {
		out.PerTryTimeout = in.PerTryTimeout
	}
	if v := in.RetryIgnorePreviousHosts; v != nil {
		out.RetryHostPredicate = nil
		if v.GetValue() {
			out.RetryHostPredicate = defaultRetry().RetryHostPredicate
		}
	}
	if in.RetryRemoteLocalities.GetValue() {
		out.RetryPriority = &routev3.RetryPolicy_RetryPriority{Name: "envoy.retry_priorities.previous_priorities",
			ConfigType: &routev3.RetryPolicy_RetryPriority_TypedConfig{TypedConfig: protoconv.MessageToAny(
				&previouspriorities.PreviousPrioritiesConfig{UpdateFrequency: 2})}}
	}
	if in.Backoff != nil {
		out.RetryBackOff = &routev3.RetryPolicy_RetryBackOff{BaseInterval: in.Backoff}
	}
	return out
}

// baseRetry is Istio's default policy; without the previous-hosts
// predicate for consistent-hash destinations.
func baseRetry(hashed bool) *routev3.RetryPolicy {
	p := defaultRetry()
	if hashed {
		p.RetryHostPredicate = nil
	}
	return p
}

// parseRetryOn splits retryOn into Envoy retry conditions and status codes.
func parseRetryOn(retryOn string) (string, []uint32) {
	var conds []string
	var codes []uint32
	for _, part := range strings.Split(retryOn, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		if code, err := strconv.ParseUint(part, 10, 32); err == nil {
			codes = append(codes, uint32(code))
			continue
		}
		conds = append(conds, part)
	}
	return strings.Join(conds, ","), codes
}

// hashPolicy is the route hash policy of a consistent-hash load balancer
// (nil: none, or a ring hash keyed on nothing the route can give).
func hashPolicy(ch *networking.LoadBalancerSettings_ConsistentHashLB) *routev3.RouteAction_HashPolicy {
	switch k := ch.GetHashKey().(type) {
	case *networking.LoadBalancerSettings_ConsistentHashLB_HttpHeaderName:
		return &routev3.RouteAction_HashPolicy{PolicySpecifier: &routev3.RouteAction_HashPolicy_Header_{
			Header: &routev3.RouteAction_HashPolicy_Header{HeaderName: k.HttpHeaderName}}}
	case *networking.LoadBalancerSettings_ConsistentHashLB_HttpCookie:
		c := k.HttpCookie
		cp := &routev3.RouteAction_HashPolicy_Cookie{Name: c.GetName(), Ttl: c.GetTtl(), Path: c.GetPath()}
		for _, a := range c.GetAttributes() {
			cp.Attributes = append(cp.Attributes, &routev3.RouteAction_HashPolicy_CookieAttribute{Name: a.GetName(), Value: a.GetValue()})
		}
		return &routev3.RouteAction_HashPolicy{PolicySpecifier: &routev3.RouteAction_HashPolicy_Cookie_{Cookie: cp}}
	case *networking.LoadBalancerSettings_ConsistentHashLB_UseSourceIp:
		return &routev3.RouteAction_HashPolicy{PolicySpecifier: &routev3.RouteAction_HashPolicy_ConnectionProperties_{
			ConnectionProperties: &routev3.RouteAction_HashPolicy_ConnectionProperties{SourceIp: k.UseSourceIp}}}
	case *networking.LoadBalancerSettings_ConsistentHashLB_HttpQueryParameterName:
		return &routev3.RouteAction_HashPolicy{PolicySpecifier: &routev3.RouteAction_HashPolicy_QueryParameter_{
			QueryParameter: &routev3.RouteAction_HashPolicy_QueryParameter{Name: k.HttpQueryParameterName}}}
	}
	return nil
}

// DestinationHash is the consistent hash a destination's DestinationRule
// asks for, as Istio picks it: the subset's settings for the destination's
// port, else the subset's, else the rule's for the port, else the rule's
// (nil: none).
func DestinationHash(dr *networking.DestinationRule, d *networking.Destination) *networking.LoadBalancerSettings_ConsistentHashLB {
	if dr == nil {
		return nil
	}
	portHash := func(pls []*networking.TrafficPolicy_PortTrafficPolicy) *networking.LoadBalancerSettings_ConsistentHashLB {
		if d.GetPort() == nil {
			return nil
		}
		for _, s := range pls {
			if s.GetPort().GetNumber() == d.GetPort().GetNumber() {
				return s.GetLoadBalancer().GetConsistentHash()
			}
		}
		return nil
	}
	out := dr.GetTrafficPolicy().GetLoadBalancer().GetConsistentHash()
	pls := portHash(dr.GetTrafficPolicy().GetPortLevelSettings())
	var sub, subPort *networking.LoadBalancerSettings_ConsistentHashLB
	for _, s := range dr.GetSubsets() {
		if s.GetName() == d.GetSubset() {
			sub = s.GetTrafficPolicy().GetLoadBalancer().GetConsistentHash()
			subPort = portHash(s.GetTrafficPolicy().GetPortLevelSettings())
			break
		}
	}
	switch {
	case subPort != nil:
		return subPort
	case sub != nil:
		return sub
	case pls != nil:
		return pls
	}
	return out
}

// ServiceHash is the consistent hash a service port's DestinationRule asks
// for (the rule's settings for the port, else the rule's), for the default
// route of a service without a VirtualService.
func ServiceHash(dr *networking.DestinationRule, port int) *networking.LoadBalancerSettings_ConsistentHashLB {
	if dr == nil {
		return nil
	}
	out := dr.GetTrafficPolicy().GetLoadBalancer().GetConsistentHash()
	for _, s := range dr.GetTrafficPolicy().GetPortLevelSettings() {
		if int(s.GetPort().GetNumber()) == port {
			if h := s.GetLoadBalancer().GetConsistentHash(); h != nil {
				out = h
			}
			break
		}
	}
	return out
}
