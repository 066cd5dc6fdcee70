package telemetry

import (
	"fmt"
	"net/url"
	"sort"
	"time"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	tracecfg "github.com/envoyproxy/go-control-plane/envoy/config/trace/v3"
	hcm "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	tracingv3 "github.com/envoyproxy/go-control-plane/envoy/type/tracing/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"
	meshconfig "istio.io/api/mesh/v1alpha1"
	tpb "istio.io/api/telemetry/v1alpha1"

	"github.com/meshplane/istiod/pkg/protoconv"
)

// TracingOptions are the proxy's inputs of Telemetry tracing.
type TracingOptions struct {
	// ServiceCluster is the node's cluster, the service name of spans.
	ServiceCluster string
	// Router proxies start a child span for the upstream request.
	Router bool
	// ProxyConfigSampling is the proxy config's tracing.sampling (0:
	// unset), the fallback when Telemetry sets no percentage.
	ProxyConfigSampling float64
	Lookup              ClusterLookup
}

// TracingFromSpec is the HCM tracing block a Telemetry tracing spec asks
// for, nil when span reporting is off (or the provider cannot be built:
// err says why).
func TracingFromSpec(m *meshconfig.MeshConfig, p Proxy, spec TracingSpec, o TracingOptions) (*hcm.HttpConnectionManager_Tracing, error) {
	if spec.Disabled {
		return nil, nil
	}
	t := &hcm.HttpConnectionManager_Tracing{}
	if o.Router {
		t.SpawnUpstreamSpan = wrapperspb.Bool(true)
	}
	name, cfg, maxTag, err := tracingProvider(spec.Provider, o)
	if err != nil {
		return nil, err
	}
	t.Provider = &tracecfg.Tracing_Http{Name: name, ConfigType: &tracecfg.Tracing_Http_TypedConfig{TypedConfig: cfg}}
	if maxTag != 0 {
		t.MaxPathTagLength = wrapperspb.UInt32(maxTag)
	}
	sampling := defaultSampling
	switch {
	case spec.RandomSamplingPercentage != nil:
		sampling = *spec.RandomSamplingPercentage
	case o.ProxyConfigSampling > 0 && o.ProxyConfigSampling <= 100:
		sampling = o.ProxyConfigSampling
	case o.ProxyConfigSampling > 100:
		sampling = 1
	}
	t.ClientSampling, t.OverallSampling = &typev3.Percent{Value: 100}, &typev3.Percent{Value: 100}
	t.RandomSampling = &typev3.Percent{Value: sampling}
	var tags []*tracingv3.CustomTag
	if spec.EnableIstioTags {
		tags = istioTags(m, p)
	}
	tags = append(tags, customTags(spec.CustomTags)...)
	sort.Slice(tags, func(i, j int) bool { return tags[i].Tag < tags[j].Tag })
	t.CustomTags = tags
	// disableContextPropagation needs a newer Envoy API than this build's
	// go-control-plane (no_context_propagation); it is not applied
	return t, nil
}

// tracingProvider is the Envoy tracer of a provider.
func tracingProvider(p *meshconfig.MeshConfig_ExtensionProvider, o TracingOptions) (string, *anypb.Any, uint32, error) {
	lookup := func(service string, port uint32) (string, string, error) {
		if o.Lookup == nil {
			return "", "", fmt.Errorf("no service lookup")
		}
		return o.Lookup(service, port)
	}
	switch x := p.GetProvider().(type) {
	case *meshconfig.MeshConfig_ExtensionProvider_Opentelemetry:
		host, cluster, err := lookup(x.Opentelemetry.GetService(), x.Opentelemetry.GetPort())
		if err != nil {
			return "", nil, 0, fmt.Errorf("tracing provider %q: %v", p.Name, err)
		}
		oc := &tracecfg.OpenTelemetryConfig{ServiceName: o.ServiceCluster}
		if h := x.Opentelemetry.GetHttp(); h != nil {
			uri, err := url.JoinPath(host, h.GetPath())
			if err != nil {
				return "", nil, 0, fmt.Errorf("tracing provider %q: otlp/http path: %v", p.Name, err)
			}
			oc.HttpService = &core.HttpService{HttpUri: &core.HttpUri{Uri: uri, HttpUpstreamType: &core.HttpUri_Cluster{Cluster: cluster},
				Timeout: h.GetTimeout()}, RequestHeadersToAdd: headers(h.GetHeaders())}
		} else {
			oc.GrpcService = &core.GrpcService{TargetSpecifier: &core.GrpcService_EnvoyGrpc_{EnvoyGrpc: &core.GrpcService_EnvoyGrpc{
				ClusterName: cluster, Authority: host}}, Timeout: x.Opentelemetry.GetGrpc().GetTimeout(),
				InitialMetadata: metadataHeaders(x.Opentelemetry.GetGrpc().GetInitialMetadata())}
		}
		return "envoy.tracers.opentelemetry", protoconv.MessageToAny(oc), x.Opentelemetry.GetMaxTagLength(), nil
	case *meshconfig.MeshConfig_ExtensionProvider_Zipkin:
		host, cluster, err := lookup(x.Zipkin.GetService(), x.Zipkin.GetPort())
		if err != nil {
			return "", nil, 0, fmt.Errorf("tracing provider %q: %v", p.Name, err)
		}
		path := x.Zipkin.GetPath()
		if path == "" {
			path = "/api/v2/spans"
		}
		timeout := x.Zipkin.GetTimeout()
		if timeout == nil {
			timeout = durationpb.New(5 * time.Second)
		}
		zc := &tracecfg.ZipkinConfig{CollectorEndpointVersion: tracecfg.ZipkinConfig_HTTP_JSON,
			TraceId_128Bit: !x.Zipkin.GetEnable_64BitTraceId(), SharedSpanContext: wrapperspb.Bool(false),
			CollectorService: &core.HttpService{HttpUri: &core.HttpUri{Uri: "http://" + host + path,
				HttpUpstreamType: &core.HttpUri_Cluster{Cluster: cluster}, Timeout: timeout}, RequestHeadersToAdd: headers(x.Zipkin.GetHeaders())}}
		if x.Zipkin.GetTraceContextOption() == meshconfig.MeshConfig_ExtensionProvider_ZipkinTracingProvider_USE_B3_WITH_W3C_PROPAGATION {
			zc.TraceContextOption = tracecfg.ZipkinConfig_USE_B3_WITH_W3C_PROPAGATION
		}
		return "envoy.tracers.zipkin", protoconv.MessageToAny(zc), x.Zipkin.GetMaxTagLength(), nil
	case *meshconfig.MeshConfig_ExtensionProvider_Datadog:
		host, cluster, err := lookup(x.Datadog.GetService(), x.Datadog.GetPort())
		if err != nil {
			return "", nil, 0, fmt.Errorf("tracing provider %q: %v", p.Name, err)
		}
		dc := &tracecfg.DatadogConfig{CollectorCluster: cluster, ServiceName: o.ServiceCluster, CollectorHostname: host}
		return "envoy.tracers.datadog", protoconv.MessageToAny(dc), x.Datadog.GetMaxTagLength(), nil
	case *meshconfig.MeshConfig_ExtensionProvider_Skywalking:
		host, cluster, err := lookup(x.Skywalking.GetService(), x.Skywalking.GetPort())
		if err != nil {
			return "", nil, 0, fmt.Errorf("tracing provider %q: %v", p.Name, err)
		}
		sc := &tracecfg.SkyWalkingConfig{GrpcService: &core.GrpcService{TargetSpecifier: &core.GrpcService_EnvoyGrpc_{
			EnvoyGrpc: &core.GrpcService_EnvoyGrpc{ClusterName: cluster, Authority: host}}}}
		return "envoy.tracers.skywalking", protoconv.MessageToAny(sc), 0, nil
	case nil:
		return "", nil, 0, fmt.Errorf("no tracing provider")
	}
	return "", nil, 0, fmt.Errorf("provider %q does not support tracing", p.GetName())
}

func headers(hs []*meshconfig.MeshConfig_ExtensionProvider_HttpHeader) []*core.HeaderValueOption {
	var out []*core.HeaderValueOption
	for _, h := range hs {
		out = append(out, &core.HeaderValueOption{Header: &core.HeaderValue{Key: h.GetName(), Value: headerValue(h)},
			AppendAction: core.HeaderValueOption_OVERWRITE_IF_EXISTS_OR_ADD})
	}
	return out
}

func metadataHeaders(hs []*meshconfig.MeshConfig_ExtensionProvider_HttpHeader) []*core.HeaderValue {
	var out []*core.HeaderValue
	for _, h := range hs {
		out = append(out, &core.HeaderValue{Key: h.GetName(), Value: headerValue(h)})
	}
	return out
}

// headerValue is a header's literal value, or "%ENVIRONMENT(NAME)%" for one
// taken from the proxy's environment.
func headerValue(h *meshconfig.MeshConfig_ExtensionProvider_HttpHeader) string {
	if e := h.GetEnvName(); e != "" {
		return "%ENVIRONMENT(" + e + ")%"
	}
	return h.GetValue()
}

// customTags are a Telemetry's custom tags.
func customTags(in map[string]*tpb.Tracing_CustomTag) []*tracingv3.CustomTag {
	var out []*tracingv3.CustomTag
	for name, t := range in {
		if t == nil {
			continue
		}
		ct := &tracingv3.CustomTag{Tag: name}
		switch x := t.Type.(type) {
		case *tpb.Tracing_CustomTag_Environment:
			ct.Type = &tracingv3.CustomTag_Environment_{Environment: &tracingv3.CustomTag_Environment{Name: x.Environment.Name, DefaultValue: x.Environment.DefaultValue}}
		case *tpb.Tracing_CustomTag_Header:
			ct.Type = &tracingv3.CustomTag_RequestHeader{RequestHeader: &tracingv3.CustomTag_Header{Name: x.Header.Name, DefaultValue: x.Header.DefaultValue}}
		case *tpb.Tracing_CustomTag_Literal:
			ct.Type = &tracingv3.CustomTag_Literal_{Literal: &tracingv3.CustomTag_Literal{Value: x.Literal.Value}}
		// formatter tags need a newer Envoy API than this build's
		// go-control-plane; they are left out
		default:
			continue
		}
		out = append(out, ct)
	}
	return out
}
