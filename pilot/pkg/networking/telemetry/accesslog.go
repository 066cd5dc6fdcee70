package telemetry

import (
	"strings"

	accesslogv3 "github.com/envoyproxy/go-control-plane/envoy/config/accesslog/v3"
	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	filelog "github.com/envoyproxy/go-control-plane/envoy/extensions/access_loggers/file/v3"
	celv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/access_loggers/filters/cel/v3"
	grpclog "github.com/envoyproxy/go-control-plane/envoy/extensions/access_loggers/grpc/v3"
	otelv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/access_loggers/open_telemetry/v3"
	reqwithoutquery "github.com/envoyproxy/go-control-plane/envoy/extensions/formatter/req_without_query/v3"
	otlpcommon "go.opentelemetry.io/proto/otlp/common/v1"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
	meshconfig "istio.io/api/mesh/v1alpha1"

	"github.com/meshplane/istiod/pkg/protoconv"
)

// DefaultTextFormat is the text format of Istio's access logs when none is
// given.
const DefaultTextFormat = `[%START_TIME%] "%REQ(:METHOD)% %REQ(X-ENVOY-ORIGINAL-PATH?:PATH)% %PROTOCOL%" ` +
	`%RESPONSE_CODE% %RESPONSE_FLAGS% %RESPONSE_CODE_DETAILS% %CONNECTION_TERMINATION_DETAILS% ` +
	`"%UPSTREAM_TRANSPORT_FAILURE_REASON%" %BYTES_RECEIVED% %BYTES_SENT% %DURATION% ` +
	`%RESP(X-ENVOY-UPSTREAM-SERVICE-TIME)% "%REQ(X-FORWARDED-FOR)%" "%REQ(USER-AGENT)%" "%REQ(X-REQUEST-ID)%" ` +
	`"%REQ(:AUTHORITY)%" "%UPSTREAM_HOST%" %UPSTREAM_CLUSTER_RAW% %UPSTREAM_LOCAL_ADDRESS% ` +
	`%DOWNSTREAM_LOCAL_ADDRESS% %DOWNSTREAM_REMOTE_ADDRESS% %REQUESTED_SERVER_NAME% %ROUTE_NAME%` + "\n"

// defaultJSONFormat is Istio's JSON access-log format.
var defaultJSONFormat = map[string]string{
	"start_time": "%START_TIME%", "route_name": "%ROUTE_NAME%", "method": "%REQ(:METHOD)%",
	"path": "%REQ(X-ENVOY-ORIGINAL-PATH?:PATH)%", "protocol": "%PROTOCOL%", "response_code": "%RESPONSE_CODE%",
	"response_flags": "%RESPONSE_FLAGS%", "response_code_details": "%RESPONSE_CODE_DETAILS%",
	"connection_termination_details": "%CONNECTION_TERMINATION_DETAILS%", "bytes_received": "%BYTES_RECEIVED%",
	"bytes_sent": "%BYTES_SENT%", "duration": "%DURATION%", "upstream_service_time": "%RESP(X-ENVOY-UPSTREAM-SERVICE-TIME)%",
	"x_forwarded_for": "%REQ(X-FORWARDED-FOR)%", "user_agent": "%REQ(USER-AGENT)%", "request_id": "%REQ(X-REQUEST-ID)%",
	"authority": "%REQ(:AUTHORITY)%", "upstream_host": "%UPSTREAM_HOST%", "upstream_cluster": "%UPSTREAM_CLUSTER_RAW%",
	"upstream_local_address": "%UPSTREAM_LOCAL_ADDRESS%", "downstream_local_address": "%DOWNSTREAM_LOCAL_ADDRESS%",
	"downstream_remote_address": "%DOWNSTREAM_REMOTE_ADDRESS%", "requested_server_name": "%REQUESTED_SERVER_NAME%",
	"upstream_transport_failure_reason": "%UPSTREAM_TRANSPORT_FAILURE_REASON%",
}

func defaultJSON() *structpb.Struct {
	s := &structpb.Struct{Fields: map[string]*structpb.Value{}}
	for k, v := range defaultJSONFormat {
		s.Fields[k] = structpb.NewStringValue(v)
	}
	return s
}

// builtinEnvoy is the provider name of Istio's built-in file log.
const builtinEnvoy = "envoy"

// Log names of the gRPC access-log services, as Istio names them.
const (
	httpALSName = "http_envoy_accesslog"
	tcpALSName  = "tcp_envoy_accesslog"
	otelALSName = "otel_envoy_accesslog"
)

// defaultFilterState are the filter state objects gRPC access logs carry
// (the peers' metadata).
var defaultFilterState = []string{"upstream_peer", "downstream_peer"}

// ClusterLookup resolves a provider's service and port to its hostname
// and outbound cluster.
type ClusterLookup func(service string, port uint32) (hostname, cluster string, err error)

// AccessLogs are the Envoy access logs of the enabled specs, with their
// CEL filters; providers that are not access loggers, or whose service
// cannot be found, are left out. mesh supplies the built-in provider's
// format.
func AccessLogs(specs []LogSpec, mesh *meshconfig.MeshConfig, lookup ClusterLookup) []*accesslogv3.AccessLog {
	var out []*accesslogv3.AccessLog
	for _, s := range specs {
		if s.Disabled {
			continue
		}
		al := accessLog(s.Provider, mesh, lookup)
		if al == nil {
			continue
		}
		if expr := s.Filter.GetExpression(); expr != "" {
			al.Filter = celFilter(expr)
		}
		out = append(out, al)
	}
	return out
}

func celFilter(expr string) *accesslogv3.AccessLogFilter {
	return &accesslogv3.AccessLogFilter{FilterSpecifier: &accesslogv3.AccessLogFilter_ExtensionFilter{
		ExtensionFilter: &accesslogv3.ExtensionFilter{Name: "envoy.access_loggers.extension_filters.cel",
			ConfigType: &accesslogv3.ExtensionFilter_TypedConfig{TypedConfig: protoconv.MessageToAny(&celv3.ExpressionFilter{Expression: expr})}}}}
}

// NoRoute wraps access logs for a listener: they log only connections no
// filter chain took (response flag NR), with their own filter too.
func NoRoute(logs []*accesslogv3.AccessLog) []*accesslogv3.AccessLog {
	return WithFilter(logs, &accesslogv3.AccessLogFilter{FilterSpecifier: &accesslogv3.AccessLogFilter_ResponseFlagFilter{
		ResponseFlagFilter: &accesslogv3.ResponseFlagFilter{Flags: []string{"NR"}}}})
}

// WithFilter are copies of logs that log only what f lets through, and
// what their own filter does (f first, as Istio ands them).
func WithFilter(logs []*accesslogv3.AccessLog, f *accesslogv3.AccessLogFilter) []*accesslogv3.AccessLog {
	out := make([]*accesslogv3.AccessLog, 0, len(logs))
	for _, l := range logs {
		c := proto.Clone(l).(*accesslogv3.AccessLog)
		if c.Filter == nil {
			c.Filter = proto.Clone(f).(*accesslogv3.AccessLogFilter)
		} else {
			c.Filter = &accesslogv3.AccessLogFilter{FilterSpecifier: &accesslogv3.AccessLogFilter_AndFilter{
				AndFilter: &accesslogv3.AndFilter{Filters: []*accesslogv3.AccessLogFilter{proto.Clone(f).(*accesslogv3.AccessLogFilter), c.Filter}}}}
		}
		out = append(out, c)
	}
	return out
}

func accessLog(p *meshconfig.MeshConfig_ExtensionProvider, mesh *meshconfig.MeshConfig, lookup ClusterLookup) *accesslogv3.AccessLog {
	switch prov := p.GetProvider().(type) {
	case *meshconfig.MeshConfig_ExtensionProvider_EnvoyFileAccessLog:
		f := prov.EnvoyFileAccessLog
		if p.Name == builtinEnvoy && f.GetLogFormat() == nil && !f.GetOmitEmptyValues() {
			return MeshFileLog(f.GetPath(), mesh)
		}
		return fileLog(f)
	case *meshconfig.MeshConfig_ExtensionProvider_EnvoyHttpAls:
		return grpcLog(prov.EnvoyHttpAls.GetService(), prov.EnvoyHttpAls.GetPort(), orDefault(prov.EnvoyHttpAls.GetLogName(), httpALSName),
			prov.EnvoyHttpAls.GetFilterStateObjectsToLog(), lookup, prov.EnvoyHttpAls)
	case *meshconfig.MeshConfig_ExtensionProvider_EnvoyTcpAls:
		return grpcLog(prov.EnvoyTcpAls.GetService(), prov.EnvoyTcpAls.GetPort(), orDefault(prov.EnvoyTcpAls.GetLogName(), tcpALSName),
			prov.EnvoyTcpAls.GetFilterStateObjectsToLog(), lookup, nil)
	case *meshconfig.MeshConfig_ExtensionProvider_EnvoyOtelAls:
		return otelLog(prov.EnvoyOtelAls, lookup)
	}
	return nil
}

func orDefault(v, d string) string {
	if v == "" {
		return d
	}
	return v
}

// fileLog is a provider's file log: its text or JSON (labels) format.
func fileLog(f *meshconfig.MeshConfig_ExtensionProvider_EnvoyFileAccessLogProvider) *accesslogv3.AccessLog {
	path := f.GetPath()
	if path == "" {
		path = "/dev/stdout"
	}
	var format *core.SubstitutionFormatString
	switch lf := f.GetLogFormat().GetLogFormat().(type) {
	case *meshconfig.MeshConfig_ExtensionProvider_EnvoyFileAccessLogProvider_LogFormat_Labels:
		labels := lf.Labels
		if len(labels.GetFields()) == 0 {
			labels = defaultJSON()
		}
		format = &core.SubstitutionFormatString{Format: &core.SubstitutionFormatString_JsonFormat{JsonFormat: labels},
			JsonFormatOptions: &core.JsonFormatOptions{}, OmitEmptyValues: f.GetOmitEmptyValues()}
		for _, v := range labels.GetFields() {
			if strings.Contains(v.GetStringValue(), "%REQ_WITHOUT_QUERY") {
				format.Formatters = []*core.TypedExtensionConfig{reqWithoutQuery()}
				break
			}
		}
	default:
		text := f.GetLogFormat().GetText()
		format = textFormat(text)
		format.OmitEmptyValues = f.GetOmitEmptyValues()
	}
	return fileAccessLog(path, format)
}

// textFormat is a text log format: the text with a newline added, or
// Istio's default.
func textFormat(text string) *core.SubstitutionFormatString {
	switch {
	case text == "":
		text = DefaultTextFormat
	case !strings.HasSuffix(text, "\n"):
		text += "\n"
	}
	f := &core.SubstitutionFormatString{Format: &core.SubstitutionFormatString_TextFormatSource{
		TextFormatSource: &core.DataSource{Specifier: &core.DataSource_InlineString{InlineString: text}}}}
	if strings.Contains(text, "%REQ_WITHOUT_QUERY") {
		f.Formatters = []*core.TypedExtensionConfig{reqWithoutQuery()}
	}
	return f
}

func reqWithoutQuery() *core.TypedExtensionConfig {
	return &core.TypedExtensionConfig{Name: "envoy.formatter.req_without_query", TypedConfig: protoconv.MessageToAny(&reqwithoutquery.ReqWithoutQuery{})}
}

func fileAccessLog(path string, f *core.SubstitutionFormatString) *accesslogv3.AccessLog {
	fl := &filelog.FileAccessLog{Path: path, AccessLogFormat: &filelog.FileAccessLog_LogFormat{LogFormat: f}}
	return &accesslogv3.AccessLog{Name: "envoy.access_loggers.file", ConfigType: &accesslogv3.AccessLog_TypedConfig{TypedConfig: protoconv.MessageToAny(fl)}}
}

// MeshFileLog is the file log of the mesh config (accessLogFile,
// accessLogFormat, accessLogEncoding).
func MeshFileLog(path string, mesh *meshconfig.MeshConfig) *accesslogv3.AccessLog {
	if mesh.GetAccessLogEncoding() == meshconfig.MeshConfig_JSON {
		labels := defaultJSON()
		if f := mesh.GetAccessLogFormat(); f != "" {
			parsed := &structpb.Struct{}
			if err := parsed.UnmarshalJSON([]byte(f)); err == nil {
				labels = parsed
			}
		}
		return fileAccessLog(path, &core.SubstitutionFormatString{Format: &core.SubstitutionFormatString_JsonFormat{JsonFormat: labels},
			JsonFormatOptions: &core.JsonFormatOptions{}})
	}
	return fileAccessLog(path, textFormat(mesh.GetAccessLogFormat()))
}

type headersToLog interface {
	GetAdditionalRequestHeadersToLog() []string
	GetAdditionalResponseHeadersToLog() []string
	GetAdditionalResponseTrailersToLog() []string
}

func grpcLog(service string, port uint32, name string, state []string, lookup ClusterLookup, http headersToLog) *accesslogv3.AccessLog {
	if lookup == nil {
		return nil
	}
	host, cluster, err := lookup(service, port)
	if err != nil {
		return nil
	}
	if len(state) == 0 {
		state = defaultFilterState
	}
	common := &grpclog.CommonGrpcAccessLogConfig{LogName: name, TransportApiVersion: core.ApiVersion_V3, FilterStateObjectsToLog: state,
		GrpcService: &core.GrpcService{TargetSpecifier: &core.GrpcService_EnvoyGrpc_{EnvoyGrpc: &core.GrpcService_EnvoyGrpc{ClusterName: cluster, Authority: host}}}}
	if http != nil {
		cfg := &grpclog.HttpGrpcAccessLogConfig{CommonConfig: common, AdditionalRequestHeadersToLog: http.GetAdditionalRequestHeadersToLog(),
			AdditionalResponseHeadersToLog: http.GetAdditionalResponseHeadersToLog(), AdditionalResponseTrailersToLog: http.GetAdditionalResponseTrailersToLog()}
		return &accesslogv3.AccessLog{Name: "envoy.access_loggers.http_grpc", ConfigType: &accesslogv3.AccessLog_TypedConfig{TypedConfig: protoconv.MessageToAny(cfg)}}
	}
	cfg := &grpclog.TcpGrpcAccessLogConfig{CommonConfig: common}
	return &accesslogv3.AccessLog{Name: "envoy.access_loggers.tcp_grpc", ConfigType: &accesslogv3.AccessLog_TypedConfig{TypedConfig: protoconv.MessageToAny(cfg)}}
}

func otelLog(p *meshconfig.MeshConfig_ExtensionProvider_EnvoyOpenTelemetryLogProvider, lookup ClusterLookup) *accesslogv3.AccessLog {
	if lookup == nil {
		return nil
	}
	host, cluster, err := lookup(p.GetService(), p.GetPort())
	if err != nil {
		return nil
	}
	name := orDefault(p.GetLogName(), otelALSName)
	text := p.GetLogFormat().GetText()
	if text == "" {
		text = DefaultTextFormat
	}
	cfg := &otelv3.OpenTelemetryAccessLogConfig{
		CommonConfig: &grpclog.CommonGrpcAccessLogConfig{LogName: name, TransportApiVersion: core.ApiVersion_V3,
			FilterStateObjectsToLog: defaultFilterState,
			GrpcService:             &core.GrpcService{TargetSpecifier: &core.GrpcService_EnvoyGrpc_{EnvoyGrpc: &core.GrpcService_EnvoyGrpc{ClusterName: cluster, Authority: host}}}},
		Body: &otlpcommon.AnyValue{Value: &otlpcommon.AnyValue_StringValue{StringValue: text}},
	}
	if labels := p.GetLogFormat().GetLabels(); labels != nil {
		cfg.Attributes = &otlpcommon.KeyValueList{}
		keys := make([]string, 0, len(labels.Fields))
		for k := range labels.Fields {
			keys = append(keys, k)
		}
		sortStrings(keys)
		for _, k := range keys {
			cfg.Attributes.Values = append(cfg.Attributes.Values, &otlpcommon.KeyValue{Key: k,
				Value: &otlpcommon.AnyValue{Value: &otlpcommon.AnyValue_StringValue{StringValue: labels.Fields[k].GetStringValue()}}})
		}
	}
	return &accesslogv3.AccessLog{Name: "envoy.access_loggers.open_telemetry", ConfigType: &accesslogv3.AccessLog_TypedConfig{TypedConfig: protoconv.MessageToAny(cfg)}}
}
