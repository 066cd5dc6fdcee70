package validation

import (
	"strings"

	telemetry "istio.io/api/telemetry/v1alpha1"

	"github.com/meshplane/istiod/pkg/config"
)

// ValidateTelemetry checks a Telemetry.
func ValidateTelemetry(cfg config.Config) (Warning, error) {
	in, ok := cfg.Spec.(*telemetry.Telemetry)
	if !ok {
		return nil, secCastError("Telemetry", cfg.Spec)
	}
	if in == nil {
		in = &telemetry.Telemetry{}
	}
	r := &Report{}
	secPolicyAttachment(r, secSpec, in.GetSelector(), in.GetTargetRef(), in.GetTargetRefs())
	if len(in.GetTracing()) > 1 {
		r.Warnf(secSpec.Field("tracing"), "multiple tracing is not currently supported")
	}
	for i, t := range in.GetTracing() {
		if t != nil {
			secTelemetryTracing(r, secSpec.Field("tracing").Index(i), t)
		}
	}
	for i, m := range in.GetMetrics() {
		if m != nil {
			secTelemetryMetrics(r, secSpec.Field("metrics").Index(i), m)
		}
	}
	for i, l := range in.GetAccessLogging() {
		if l != nil {
			secTelemetryAccessLogging(r, secSpec.Field("accessLogging").Index(i), l)
		}
	}
	return r.Result()
}

func secTelemetryProviders(r *Report, p Path, providers []*telemetry.ProviderRef) {
	for i, pr := range providers {
		if pr.GetName() == "" {
			r.Errorf(p.Index(i).Field("name"), "providers.name may not be empty")
		}
	}
}

func secWorkloadModeKnown(r *Report, p Path, mode telemetry.WorkloadMode) {
	if !secEnumKnown(mode, telemetry.WorkloadMode_name) {
		r.Errorf(p, "unknown workload mode %d", int32(mode))
	}
}

func secTelemetryTracing(r *Report, p Path, t *telemetry.Tracing) {
	if len(t.GetProviders()) > 1 {
		r.Warnf(p.Field("providers"), "multiple providers is not currently supported")
	}
	secTelemetryProviders(r, p.Field("providers"), t.GetProviders())
	if t.GetMatch() != nil {
		secWorkloadModeKnown(r, p.Field("match").Field("mode"), t.GetMatch().GetMode())
	}
	if pct := t.GetRandomSamplingPercentage(); pct != nil {
		if v := pct.GetValue(); v < 0 || v > 100 {
			r.Errorf(p.Field("randomSamplingPercentage"), "randomSamplingPercentage must be in range [0.0, 100.0], found %v", v)
		}
	}
	tags := t.GetCustomTags()
	for _, name := range secSortedKeys(tags) {
		tp := p.Field("customTags").Key(name)
		if name == "" {
			r.Errorf(tp, "tag name may not be empty")
		}
		tag := tags[name]
		if tag == nil {
			r.Errorf(tp, "tag '%s' may not have a nil value", name)
			continue
		}
		switch v := tag.GetType().(type) {
		case *telemetry.Tracing_CustomTag_Literal:
			if v.Literal.GetValue() == "" {
				r.Errorf(tp.Field("literal").Field("value"), "literal tag value may not be empty")
			}
		case *telemetry.Tracing_CustomTag_Header:
			if v.Header.GetName() == "" {
				r.Errorf(tp.Field("header").Field("name"), "header tag name may not be empty")
			}
		case *telemetry.Tracing_CustomTag_Environment:
			if v.Environment.GetName() == "" {
				r.Errorf(tp.Field("environment").Field("name"), "environment tag name may not be empty")
			}
		case *telemetry.Tracing_CustomTag_Formatter:
			if v.Formatter.GetValue() == "" {
				r.Errorf(tp.Field("formatter").Field("value"), "formatter tag value may not be empty")
			}
		case nil:
			r.Warnf(tp, "tag %q sets none of literal, environment, header or formatter and has no effect", name)
		}
	}
}

func secTelemetryMetrics(r *Report, p Path, m *telemetry.Metrics) {
	secTelemetryProviders(r, p.Field("providers"), m.GetProviders())
	if m.GetReportingInterval() != nil {
		r.Add(p.Field("reportingInterval"), CheckDuration(m.GetReportingInterval()))
	}
	for i, o := range m.GetOverrides() {
		op := p.Field("overrides").Index(i)
		if o == nil {
			r.Errorf(op, "tagOverrides may not be null")
			continue
		}
		secMetricSelector(r, op.Field("match"), o.GetMatch())
		tos := o.GetTagOverrides()
		for _, name := range secSortedKeys(tos) {
			tp := op.Field("tagOverrides").Key(name)
			if name == "" {
				r.Warnf(tp, "tagOverrides.name may not be empty")
			}
			to := tos[name]
			if to == nil {
				r.Errorf(tp, "tagOverrides may not be null")
				continue
			}
			switch to.GetOperation() {
			case telemetry.MetricsOverrides_TagOverride_UPSERT:
				if to.GetValue() == "" {
					r.Errorf(tp.Field("value"), "tagOverrides.value must be set when operation is UPSERT")
				}
			case telemetry.MetricsOverrides_TagOverride_REMOVE:
				if to.GetValue() != "" {
					r.Errorf(tp.Field("value"), "tagOverrides.value may only be set when operation is UPSERT")
				}
			default:
				r.Errorf(tp.Field("operation"), "unknown tag override operation %d", int32(to.GetOperation()))
			}
		}
	}
}

func secMetricSelector(r *Report, p Path, sel *telemetry.MetricSelector) {
	if sel == nil {
		return
	}
	secWorkloadModeKnown(r, p.Field("mode"), sel.GetMode())
	switch mm := sel.GetMetricMatch().(type) {
	case *telemetry.MetricSelector_CustomMetric:
		if mm.CustomMetric == "" {
			r.Errorf(p.Field("customMetric"), "customMetric may not be empty")
		}
	case *telemetry.MetricSelector_Metric:
		if !secEnumKnown(mm.Metric, telemetry.MetricSelector_IstioMetric_name) {
			r.Errorf(p.Field("metric"), "unknown metric %d", int32(mm.Metric))
		}
	}
}

func secTelemetryAccessLogging(r *Report, p Path, l *telemetry.AccessLogging) {
	secTelemetryProviders(r, p.Field("providers"), l.GetProviders())
	if l.GetMatch() != nil {
		secWorkloadModeKnown(r, p.Field("match").Field("mode"), l.GetMatch().GetMode())
	}
	if l.GetFilter() != nil {
		r.Add(p.Field("filter").Field("expression"), secFilterExpression(l.GetFilter().GetExpression()))
	}
}

// secFilterExpression does the syntax checks that do not need a CEL parser:
// the expression is set and its brackets and quotes balance.
func secFilterExpression(expr string) error {
	if strings.TrimSpace(expr) == "" {
		return errorfSec("must be a valid CEL expression, filter expression may not be empty")
	}
	var stack []rune
	var quote rune
	escaped := false
	for _, c := range expr {
		switch {
		case quote != 0:
			if escaped {
				escaped = false
			} else if c == '\\' {
				escaped = true
			} else if c == quote {
				quote = 0
			}
		case c == '"' || c == '\'':
			quote = c
		case c == '(' || c == '[' || c == '{':
			stack = append(stack, c)
		case c == ')' || c == ']' || c == '}':
			open := map[rune]rune{')': '(', ']': '[', '}': '{'}[c]
			if len(stack) == 0 || stack[len(stack)-1] != open {
				return errorfSec("must be a valid CEL expression, %q: unbalanced %q", expr, c)
			}
			stack = stack[:len(stack)-1]
		}
	}
	if quote != 0 {
		return errorfSec("must be a valid CEL expression, %q: unterminated string", expr)
	}
	if len(stack) > 0 {
		return errorfSec("must be a valid CEL expression, %q: unclosed %q", expr, stack[len(stack)-1])
	}
	return nil
}
