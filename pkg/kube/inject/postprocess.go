package inject

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/meshplane/istiod/pkg/config/mesh"
)

// Environment variables of the proxy the injector sets.
const (
	envAppProbers       = "ISTIO_KUBE_APP_PROBERS"
	envPrometheusConfig = "ISTIO_PROMETHEUS_ANNOTATIONS"
)

// postProcess does what the templates cannot: cluster variables from the
// URL path, the Prometheus merge, probe rewriting, the status annotation and
// the container order.
func postProcess(pod, templatePod *corev1.Pod, r Request) error {
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	if pod.Labels == nil {
		pod.Labels = map[string]string{}
	}
	if c := findInPod(ProxyContainerName, pod); c != nil && len(r.ProxyEnvs) > 0 {
		updateClusterEnvs(c, r.ProxyEnvs)
	}
	if err := prometheusMerge(pod, r); err != nil {
		return err
	}
	securePrometheusPort(pod)
	rewriteProbes(pod, r)
	if nw, ok := r.ProxyEnvs["ISTIO_META_NETWORK"]; ok {
		pod.Labels[LabelNetwork] = nw
	}
	pod.Annotations[AnnotationStatus] = statusOf(templatePod.Spec, r.Revision)
	for k, v := range r.Config.InjectedAnnotations {
		pod.Annotations[k] = v
	}
	return reorder(pod, r)
}

// reorder puts the proxy last (first when the application must wait for
// it); with a native sidecar the init order is iptables, proxy, the rest;
// else validation first and iptables last, so that init containers are not
// blackholed.
func reorder(pod *corev1.Pod, r Request) error {
	dc := r.Mesh.GetDefaultConfig()
	if v, ok := r.Pod.Annotations[AnnotationProxyConfig]; ok {
		pc, err := mesh.ApplyProxyConfig(v, dc)
		if err != nil {
			return err
		}
		dc = pc
	}
	hold := dc.GetHoldApplicationUntilProxyStarts().GetValue() ||
		r.Config.Values.Bool("global", "proxy", "holdApplicationUntilProxyStarts")
	pod.Spec.Containers = placeContainer(pod.Spec.Containers, ProxyContainerName, hold)
	ic := pod.Spec.InitContainers
	if findContainer(ProxyContainerName, ic) != nil {
		ic = placeContainer(ic, EnableCoreDumpName, true)
		ic = placeContainer(ic, ProxyContainerName, true)
		ic = placeContainer(ic, ValidationContainerName, true)
		ic = placeContainer(ic, InitContainerName, true)
	} else {
		ic = placeContainer(ic, ValidationContainerName, true)
		ic = placeContainer(ic, InitContainerName, false)
		ic = placeContainer(ic, EnableCoreDumpName, false)
	}
	pod.Spec.InitContainers = ic
	return nil
}

// sanitizeLabelName is Prometheus' label name sanitising: every character
// other than [a-zA-Z0-9_] becomes "_" (so prometheus.io/port and
// prometheus-io/port are the same annotation to Prometheus).
func sanitizeLabelName(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '_' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9') {
			return r
		}
		return '_'
	}, s)
}

const (
	promScrape        = "prometheus_io_scrape"
	promPort          = "prometheus_io_port"
	promPath          = "prometheus_io_path"
	promScrapeTargets = "prometheus_istio_io_scrape_targets"
	promSecurePort    = "prometheus_istio_io_secure_port"
)

type scrapeTarget struct {
	Port string `json:"port"`
	Path string `json:"path"`
}

// scrapeConfig is ISTIO_PROMETHEUS_ANNOTATIONS, the app's own scrape
// settings the agent merges into 15020.
type scrapeConfig struct {
	Scrape  string         `json:"scrape"`
	Path    string         `json:"path"`
	Port    string         `json:"port"`
	Targets []scrapeTarget `json:"targets,omitempty"`
}

func (c scrapeConfig) empty() bool {
	return c.Scrape == "" && c.Path == "" && c.Port == "" && len(c.Targets) == 0
}

// reservedPorts are the proxy's own ports, never an app scrape target.
var reservedPorts = map[string]string{
	"15000": "Envoy admin",
	"15001": "outbound traffic capture",
	"15004": "pilot debug",
	"15006": "inbound traffic capture",
	"15008": "HBONE tunnel",
	"15020": "pilot-agent status / merged Prometheus",
	"15021": "Envoy health",
	"15053": "DNS proxy",
	"15090": "Envoy Prometheus (already merged)",
}

func scrapeEnabled(pod *corev1.Pod) bool {
	for k, v := range pod.Annotations {
		if sanitizeLabelName(k) != promScrape {
			continue
		}
		if b, err := strconv.ParseBool(v); err == nil {
			return b
		}
	}
	return true
}

func mergeEnabled(r Request, annotations map[string]string) bool {
	if v, ok := annotations[AnnotationPrometheusMerge]; ok {
		if b, err := strconv.ParseBool(v); err == nil {
			return b
		}
	}
	if m := r.Mesh.GetEnablePrometheusMerge(); m != nil {
		return m.Value
	}
	return true
}

func prometheusPort(pod *corev1.Pod) (string, bool) {
	for k, v := range pod.Annotations {
		if sanitizeLabelName(k) == promPort {
			return v, true
		}
	}
	return "", false
}

func clearPrometheusAnnotations(pod *corev1.Pod) {
	for k := range pod.Annotations {
		switch sanitizeLabelName(k) {
		case promPath, promPort, promScrape, promScrapeTargets:
			delete(pod.Annotations, k)
		}
	}
}

func readScrapeConfig(pod *corev1.Pod) scrapeConfig {
	var c scrapeConfig
	for k, v := range pod.Annotations {
		switch sanitizeLabelName(k) {
		case promPort:
			c.Port = v
		case promScrape:
			c.Scrape = v
		case promPath:
			c.Path = v
		case promScrapeTargets:
			t, err := parseScrapeTargets(v)
			if err != nil {
				scope.Warnf("cannot parse %s: %v", k, err)
				continue
			}
			c.Targets = t
		}
	}
	return c
}

// parseScrapeTargets reads "port:path,port:path" (path defaults to /metrics).
func parseScrapeTargets(s string) ([]scrapeTarget, error) {
	var out []scrapeTarget
	for _, e := range strings.Split(s, ",") {
		if e = strings.TrimSpace(e); e == "" {
			continue
		}
		port, path, _ := strings.Cut(e, ":")
		port, path = strings.TrimSpace(port), strings.TrimSpace(path)
		if port == "" {
			return nil, fmt.Errorf("empty port in scrape target %q", e)
		}
		if path == "" {
			path = "/metrics"
		}
		out = append(out, scrapeTarget{Port: port, Path: path})
	}
	return out, nil
}

// checkScrapePort refuses a scrape port that is no port, the agent's or
// another of the proxy's.
func checkScrapePort(port, agentPort, what string) error {
	n, err := strconv.Atoi(port)
	if err != nil || n < 1 || n > 65535 {
		if what == "targets" {
			return fmt.Errorf("invalid prometheus scrape targets: invalid target port %q", port)
		}
		return fmt.Errorf("invalid prometheus scrape configuration: invalid port %q", port)
	}
	canon := strconv.Itoa(n)
	noun := "port"
	if what == "targets" {
		noun = "target port"
	}
	if canon == agentPort {
		return fmt.Errorf("invalid prometheus scrape %s: %s %s conflicts with agent port", what, noun, port)
	}
	if reason, ok := reservedPorts[canon]; ok {
		return fmt.Errorf("invalid prometheus scrape %s: %s %s is reserved for Istio (%s) and cannot be scraped", what, noun, port, reason)
	}
	return nil
}

// prometheusMerge points the pod's prometheus.io annotations at the agent
// (which merges the app's metrics) and hands the app's settings to the agent
// in ISTIO_PROMETHEUS_ANNOTATIONS.
func prometheusMerge(pod *corev1.Pod, r Request) error {
	if !scrapeEnabled(pod) || !mergeEnabled(r, pod.Annotations) {
		return nil
	}
	target := strconv.Itoa(int(r.Mesh.GetDefaultConfig().GetStatusPort()))
	if cur, ok := prometheusPort(pod); ok && cur == target {
		return nil // already pointed at the agent (re-injection, or the user's choice)
	}
	sc := readScrapeConfig(pod)
	switch {
	case len(sc.Targets) > 0:
		sc.Port, sc.Path = sc.Targets[0].Port, sc.Targets[0].Path
		for _, t := range sc.Targets {
			if err := checkScrapePort(t.Port, target, "targets"); err != nil {
				return err
			}
		}
	case sc.Port != "":
		if err := checkScrapePort(sc.Port, target, "configuration"); err != nil {
			return err
		}
	}
	if c := findInPod(ProxyContainerName, pod); c != nil && !sc.empty() {
		b, err := json.Marshal(sc)
		if err != nil {
			return err
		}
		c.Env = append(c.Env, corev1.EnvVar{Name: envPrometheusConfig, Value: string(b)})
	}
	clearPrometheusAnnotations(pod)
	pod.Annotations["prometheus.io/port"] = target
	pod.Annotations["prometheus.io/path"] = "/stats/prometheus"
	pod.Annotations["prometheus.io/scrape"] = "true"
	return nil
}

// securePrometheusPort sets prometheus.istio.io/secure-port from the
// proxy's ENVOY_SECURE_MERGED_METRICS_PORT unless the pod sets it.
func securePrometheusPort(pod *corev1.Pod) {
	for k := range pod.Annotations {
		if sanitizeLabelName(k) == promSecurePort {
			return
		}
	}
	c := findInPod(ProxyContainerName, pod)
	if c == nil {
		return
	}
	for _, e := range c.Env {
		if e.Name == "ENVOY_SECURE_MERGED_METRICS_PORT" && e.Value != "" && e.Value != "0" {
			pod.Annotations["prometheus.istio.io/secure-port"] = e.Value
			return
		}
	}
}
