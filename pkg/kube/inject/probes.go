package inject

import (
	"encoding/json"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// prober is one app probe as the agent runs it (ISTIO_KUBE_APP_PROBERS).
type prober struct {
	HTTPGet        *corev1.HTTPGetAction   `json:"httpGet,omitempty"`
	TCPSocket      *corev1.TCPSocketAction `json:"tcpSocket,omitempty"`
	GRPC           *corev1.GRPCAction      `json:"grpc,omitempty"`
	TimeoutSeconds int32                   `json:"timeoutSeconds,omitempty"`
}

// proberURLs are the agent's paths for a container's readiness, liveness
// and startup probes and its preStop and postStart hooks.
func proberURLs(container string) (ready, live, startup, preStop, postStart string) {
	return "/app-health/" + container + "/readyz", "/app-health/" + container + "/livez",
		"/app-health/" + container + "/startupz", "/app-lifecycle/" + container + "/prestopz",
		"/app-lifecycle/" + container + "/poststartz"
}

// rewriteProbes hands the app's HTTP, TCP and gRPC probes (and HTTP/TCP
// lifecycle hooks) to the agent on the status port, unless the pod's
// sidecar.istio.io/rewriteAppHTTPProbers or the values' rewriteAppHTTPProbe
// say not to.
func rewriteProbes(pod *corev1.Pod, r Request) {
	sidecar := findInPod(ProxyContainerName, pod)
	if sidecar == nil {
		return
	}
	rewrite := r.Config.Values.Bool("sidecarInjectorWebhook", "rewriteAppHTTPProbe")
	if v, ok := pod.Annotations[AnnotationRewriteProbers]; ok {
		if b, err := strconv.ParseBool(v); err == nil {
			rewrite = b
		}
	}
	if !rewrite {
		return
	}
	statusPort := r.Mesh.GetDefaultConfig().GetStatusPort()
	if probers := appProbers(pod, statusPort); probers != "" {
		_, reinjected := pod.Annotations[AnnotationStatus]
		sidecar.Env = mergeProbers(reinjected, sidecar.Env, probers)
	}
	port := int(statusPort)
	if v, ok := pod.Annotations[AnnotationStatusPort]; ok {
		p, err := strconv.Atoi(v)
		if err != nil {
			scope.Errorf("invalid annotation %s=%s: %v", AnnotationStatusPort, v, err)
		}
		port = p
	}
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name != ProxyContainerName {
			convertProbes(&pod.Spec.Containers[i], port)
		}
	}
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name != ProxyContainerName {
			convertProbes(&pod.Spec.InitContainers[i], port)
		}
	}
}

// mergeProbers appends ISTIO_KUBE_APP_PROBERS, or on re-injection merges
// the new probers into the existing variable (existing entries win).
func mergeProbers(reinjected bool, env []corev1.EnvVar, probers string) []corev1.EnvVar {
	if reinjected {
		for i, e := range env {
			if e.Name != envAppProbers {
				continue
			}
			var old, fresh map[string]*prober
			if err := json.Unmarshal([]byte(e.Value), &old); err != nil {
				scope.Errorf("cannot decode the existing %s: %v", envAppProbers, err)
				return env
			}
			if err := json.Unmarshal([]byte(probers), &fresh); err != nil {
				return env
			}
			for k, v := range old {
				fresh[k] = v
			}
			b, err := json.Marshal(fresh)
			if err != nil {
				return env
			}
			env[i] = corev1.EnvVar{Name: envAppProbers, Value: string(b)}
			return env
		}
	}
	return append(env, corev1.EnvVar{Name: envAppProbers, Value: probers})
}

// appProbers is the JSON of every app container's probes by agent path,
// named ports resolved ("" when there is none).
func appProbers(pod *corev1.Pod, statusPort int32) string {
	out := map[string]*prober{}
	all := append(append([]corev1.Container{}, pod.Spec.InitContainers...), pod.Spec.Containers...)
	for _, c := range all {
		if c.Name == ProxyContainerName {
			continue
		}
		ports := map[string]int32{}
		for _, p := range c.Ports {
			if p.Name != "" {
				ports[p.Name] = p.ContainerPort
			}
		}
		ready, live, startup, preStop, postStart := proberURLs(c.Name)
		add := func(path string, p *prober) {
			if p = resolvePort(p, ports, statusPort); p != nil {
				out[path] = p
			}
		}
		add(ready, probeProber(c.ReadinessProbe))
		add(live, probeProber(c.LivenessProbe))
		add(startup, probeProber(c.StartupProbe))
		if c.Lifecycle != nil {
			add(preStop, handlerProber(c.Lifecycle.PreStop))
			add(postStart, handlerProber(c.Lifecycle.PostStart))
		}
	}
	if len(out) == 0 {
		return ""
	}
	b, err := json.Marshal(out)
	if err != nil {
		scope.Errorf("cannot encode the app probers: %v", err)
		return ""
	}
	return string(b)
}

// resolvePort replaces a named port by its number; a probe whose name does
// not resolve, or that already targets the status port, is dropped.
func resolvePort(p *prober, ports map[string]int32, statusPort int32) *prober {
	if p == nil {
		return nil
	}
	if p.GRPC != nil {
		return p
	}
	var port *intstr.IntOrString
	switch {
	case p.HTTPGet != nil:
		port = &p.HTTPGet.Port
	case p.TCPSocket != nil:
		port = &p.TCPSocket.Port
	default:
		return nil
	}
	if port.Type == intstr.String {
		n, ok := ports[port.StrVal]
		if !ok {
			return nil
		}
		*port = intstr.FromInt32(n)
	} else if port.IntVal == statusPort {
		return nil
	}
	return p
}

func probeProber(p *corev1.Probe) *prober {
	switch {
	case p == nil:
		return nil
	case p.HTTPGet != nil:
		return &prober{HTTPGet: p.HTTPGet.DeepCopy(), TimeoutSeconds: p.TimeoutSeconds}
	case p.TCPSocket != nil:
		return &prober{TCPSocket: p.TCPSocket.DeepCopy(), TimeoutSeconds: p.TimeoutSeconds}
	case p.GRPC != nil:
		return &prober{GRPC: p.GRPC.DeepCopy(), TimeoutSeconds: p.TimeoutSeconds}
	}
	return nil
}

func handlerProber(h *corev1.LifecycleHandler) *prober {
	switch {
	case h == nil:
		return nil
	case h.HTTPGet != nil:
		return &prober{HTTPGet: h.HTTPGet.DeepCopy()}
	case h.TCPSocket != nil:
		return &prober{TCPSocket: h.TCPSocket.DeepCopy()}
	}
	return nil
}

// convertProbes points a container's probes and hooks at the agent.
func convertProbes(c *corev1.Container, port int) {
	ready, live, startup, preStop, postStart := proberURLs(c.Name)
	if p := agentProbe(c.ReadinessProbe, ready, port); p != nil {
		c.ReadinessProbe = p
	}
	if p := agentProbe(c.LivenessProbe, live, port); p != nil {
		c.LivenessProbe = p
	}
	if p := agentProbe(c.StartupProbe, startup, port); p != nil {
		c.StartupProbe = p
	}
	if c.Lifecycle != nil {
		if h := agentHandler(c.Lifecycle.PreStop, preStop, port); h != nil {
			c.Lifecycle.PreStop = h
		}
		if h := agentHandler(c.Lifecycle.PostStart, postStart, port); h != nil {
			c.Lifecycle.PostStart = h
		}
	}
}

// toAgent makes a GET of path on the agent's port (kubelet speaks HTTP to
// the agent, which speaks HTTPS, TCP or gRPC to the app).
func toAgent(a *corev1.HTTPGetAction, path string, port int) {
	a.Port = intstr.FromInt32(int32(port))
	a.Path = path
	if a.Scheme == corev1.URISchemeHTTPS {
		a.Scheme = corev1.URISchemeHTTP
	}
}

func agentProbe(p *corev1.Probe, path string, port int) *corev1.Probe {
	if p == nil || (p.HTTPGet == nil && p.TCPSocket == nil && p.GRPC == nil) {
		return nil
	}
	out := p.DeepCopy()
	if out.HTTPGet == nil {
		out.HTTPGet = &corev1.HTTPGetAction{}
	}
	toAgent(out.HTTPGet, path, port)
	out.TCPSocket, out.GRPC = nil, nil
	return out
}

func agentHandler(h *corev1.LifecycleHandler, path string, port int) *corev1.LifecycleHandler {
	if h == nil || (h.HTTPGet == nil && h.TCPSocket == nil) {
		return nil
	}
	out := h.DeepCopy()
	if out.HTTPGet == nil {
		out.HTTPGet = &corev1.HTTPGetAction{}
	}
	toAgent(out.HTTPGet, path, port)
	out.TCPSocket = nil
	return out
}
