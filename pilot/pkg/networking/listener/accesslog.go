package listener

import (
	accesslogv3 "github.com/envoyproxy/go-control-plane/envoy/config/accesslog/v3"
	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	filelog "github.com/envoyproxy/go-control-plane/envoy/extensions/access_loggers/file/v3"

	"github.com/meshplane/istiod/pilot/pkg/networking/telemetry"
	"github.com/meshplane/istiod/pkg/protoconv"
)

// DefaultAccessLogFormat is the text format Istio's proxies log with when the
// mesh config sets accessLogFile but no accessLogFormat.
const DefaultAccessLogFormat = `[%START_TIME%] "%REQ(:METHOD)% %REQ(X-ENVOY-ORIGINAL-PATH?:PATH)% %PROTOCOL%" ` +
	`%RESPONSE_CODE% %RESPONSE_FLAGS% %RESPONSE_CODE_DETAILS% %CONNECTION_TERMINATION_DETAILS% ` +
	`"%UPSTREAM_TRANSPORT_FAILURE_REASON%" %BYTES_RECEIVED% %BYTES_SENT% %DURATION% ` +
	`%RESP(X-ENVOY-UPSTREAM-SERVICE-TIME)% "%REQ(X-FORWARDED-FOR)%" "%REQ(USER-AGENT)%" "%REQ(X-REQUEST-ID)%" ` +
	`"%REQ(:AUTHORITY)%" "%UPSTREAM_HOST%" %UPSTREAM_CLUSTER_RAW% %UPSTREAM_LOCAL_ADDRESS% ` +
	`%DOWNSTREAM_LOCAL_ADDRESS% %DOWNSTREAM_REMOTE_ADDRESS% %REQUESTED_SERVER_NAME% %ROUTE_NAME%` + "\n"

// accessLogs is the file access log the mesh config asks for (none when
// AccessLogFile is empty).
func (o Options) accessLogs() []*accesslogv3.AccessLog {
	if o.dir != nil && o.dir.LogsSet {
		return o.dir.Logs
	}
	if o.AccessLogFile == "" {
		return nil
	}
	format := o.AccessLogFormat
	if format == "" {
		format = DefaultAccessLogFormat
	}
	fl := &filelog.FileAccessLog{
		Path: o.AccessLogFile,
		AccessLogFormat: &filelog.FileAccessLog_LogFormat{LogFormat: &core.SubstitutionFormatString{
			Format: &core.SubstitutionFormatString_TextFormatSource{TextFormatSource: &core.DataSource{
				Specifier: &core.DataSource_InlineString{InlineString: format}}}}},
	}
	return []*accesslogv3.AccessLog{{Name: "envoy.access_loggers.file", ConfigType: &accesslogv3.AccessLog_TypedConfig{TypedConfig: protoconv.MessageToAny(fl)}}}
}

// noRouteLogs log, at the listener, connections no filter chain took
// (response flag NR).
func (o Options) noRouteLogs() []*accesslogv3.AccessLog {
	if o.dir != nil && o.dir.LogsSet {
		return telemetry.NoRoute(o.dir.Logs)
	}
	logs := o.accessLogs()
	for _, l := range logs {
		l.Filter = &accesslogv3.AccessLogFilter{FilterSpecifier: &accesslogv3.AccessLogFilter_ResponseFlagFilter{
			ResponseFlagFilter: &accesslogv3.ResponseFlagFilter{Flags: []string{"NR"}}}}
	}
	return logs
}
