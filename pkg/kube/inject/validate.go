package inject

import (
	"errors"
	"fmt"
	"net/netip"
	"sort"
	"strconv"
	"strings"
	"unicode"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/meshplane/istiod/pkg/config/mesh"
	"github.com/meshplane/istiod/pkg/config/validation"
)

// Pod annotations the injector reads.
const (
	AnnotationInject          = "sidecar.istio.io/inject"
	AnnotationStatus          = "sidecar.istio.io/status"
	AnnotationTemplates       = "inject.istio.io/templates"
	AnnotationProxyConfig     = "proxy.istio.io/config"
	AnnotationProxyOverrides  = "proxy.istio.io/overrides"
	AnnotationNativeSidecar   = "sidecar.istio.io/nativeSidecar"
	AnnotationRewriteProbers  = "sidecar.istio.io/rewriteAppHTTPProbers"
	AnnotationStatusPort      = "status.sidecar.istio.io/port"
	AnnotationInterception    = "sidecar.istio.io/interceptionMode"
	AnnotationProxyImageType  = "sidecar.istio.io/proxyImageType"
	AnnotationPrometheusMerge = "prometheus.istio.io/merge-metrics"
	LabelInject               = "sidecar.istio.io/inject"
	LabelNetwork              = "topology.istio.io/network"
)

// annotationChecks validate the annotations whose values the templates use
// unquoted or the injector parses; a pod with an invalid one is refused.
var annotationChecks = map[string]func(string) error{
	AnnotationInterception: checkInterceptionMode,
	AnnotationStatusPort:   checkPort,
	"readiness.status.sidecar.istio.io/initialDelaySeconds": checkUint32,
	"readiness.status.sidecar.istio.io/periodSeconds":       checkUint32,
	"readiness.status.sidecar.istio.io/failureThreshold":    checkUint32,
	"traffic.sidecar.istio.io/includeOutboundIPRanges": func(v string) error {
		if v == "*" {
			return nil
		}
		return prefixed("includeIPRanges invalid", checkCIDRs(v))
	},
	"traffic.sidecar.istio.io/excludeOutboundIPRanges": func(v string) error {
		return prefixed("excludeIPRanges invalid", checkCIDRs(v))
	},
	"traffic.sidecar.istio.io/includeInboundPorts": func(v string) error {
		if v == "*" {
			return nil
		}
		return prefixed("includeInboundPorts invalid", checkPorts(v))
	},
	"traffic.sidecar.istio.io/excludeInboundPorts":  func(v string) error { return prefixed("excludeInboundPorts invalid", checkPorts(v)) },
	"traffic.sidecar.istio.io/excludeOutboundPorts": func(v string) error { return prefixed("excludeOutboundPorts invalid", checkPorts(v)) },
	"traffic.sidecar.istio.io/excludeInterfaces":    checkInterfaces,
	"traffic.sidecar.istio.io/kubevirtInterfaces":   checkInterfaces,
	"istio.io/reroute-virtual-interfaces":           checkInterfaces,
	AnnotationPrometheusMerge:                       func(v string) error { _, err := strconv.ParseBool(v); return err },
	AnnotationProxyConfig:                           checkProxyConfig,
	"sidecar.istio.io/proxyCPU":                     checkQuantity,
	"sidecar.istio.io/proxyMemory":                  checkQuantity,
	"sidecar.istio.io/proxyCPULimit":                checkQuantity,
	"sidecar.istio.io/proxyMemoryLimit":             checkQuantity,
}

// validateAnnotations checks every annotation of annotationChecks, naming
// each invalid one, in name order.
func validateAnnotations(annotations map[string]string) error {
	var errs []error
	for _, name := range sortedKeys(annotations) {
		check, ok := annotationChecks[name]
		if !ok {
			continue
		}
		if err := check(annotations[name]); err != nil {
			errs = append(errs, fmt.Errorf("invalid value '%s' for annotation '%s': %v", annotations[name], name, err))
		}
	}
	return errors.Join(errs...)
}

func prefixed(what string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: %v", what, err)
}

func checkInterceptionMode(v string) error {
	switch v {
	case "REDIRECT", "TPROXY", "NONE":
		return nil
	}
	return fmt.Errorf("interceptionMode invalid, use REDIRECT,TPROXY,NONE: %v", v)
}

func parsePort(s string) (int, error) {
	p, err := strconv.ParseUint(strings.TrimSpace(s), 10, 16)
	if err != nil {
		return 0, fmt.Errorf("failed parsing port '%s': %v", s, err)
	}
	return int(p), nil
}

func checkPort(v string) error {
	_, err := parsePort(v)
	return prefixed("excludeInboundPorts invalid", err)
}

func checkPorts(v string) error {
	if strings.TrimSpace(v) == "" {
		return nil
	}
	for _, p := range strings.Split(strings.TrimSpace(v), ",") {
		if _, err := parsePort(p); err != nil {
			return fmt.Errorf("failed parsing port '%s': %v", p, err)
		}
	}
	return nil
}

func checkUint32(v string) error {
	_, err := strconv.ParseUint(v, 10, 32)
	return err
}

func checkCIDRs(v string) error {
	if v == "" {
		return nil
	}
	for _, c := range strings.Split(v, ",") {
		if _, err := netip.ParsePrefix(c); err != nil {
			return fmt.Errorf("failed parsing cidr '%s': %v", c, err)
		}
	}
	return nil
}

// checkInterfaces accepts a comma-separated list of Linux interface names.
func checkInterfaces(v string) error {
	var bad []string
	for _, name := range strings.Split(v, ",") {
		name = strings.TrimSpace(name)
		if !validInterfaceName(name) {
			bad = append(bad, fmt.Sprintf("interface name %q is invalid", name))
		}
	}
	if len(bad) > 0 {
		sort.Strings(bad)
		return errors.New(strings.Join(bad, "; "))
	}
	return nil
}

func validInterfaceName(name string) bool {
	if len(name) == 0 || len(name) > 15 {
		return false
	}
	for _, r := range name {
		if r == '/' || r == ':' || unicode.IsSpace(r) {
			return false
		}
	}
	return true
}

func checkQuantity(v string) error {
	for _, r := range v {
		if unicode.IsControl(r) {
			return errors.New("value contains control characters")
		}
	}
	_, err := resource.ParseQuantity(v)
	return err
}

func checkProxyConfig(v string) error {
	pc, err := mesh.ApplyProxyConfig(v, mesh.DefaultProxyConfig())
	if err != nil {
		return fmt.Errorf("failed to convert to apply proxy config: %v", err)
	}
	return validation.ValidateMeshProxyConfig(pc)
}
