package autoregistration

import (
	"fmt"
	"maps"
	"strings"
	"time"

	"istio.io/api/annotation"
	networking "istio.io/api/networking/v1alpha3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/config/schema/gvk"
)

const (
	// timeFormat is how the connectedAt and disconnectedAt annotations
	// write a time.
	timeFormat = time.RFC3339Nano
	// HealthCheckAnnotation marks an entry whose Healthy condition decides
	// whether its endpoint is healthy (set on auto-registered entries when
	// the agent has a readiness probe).
	HealthCheckAnnotation = "proxy.istio.io/health-checks-enabled"
	// localityLabel is the agent's istio-locality label: its value has
	// slashes, which a label may not, and the entry carries the locality
	// in its own field.
	localityLabel = "istio-locality"
)

var (
	groupAnnotation        = annotation.IoIstioAutoRegistrationGroup.Name
	controllerAnnotation   = annotation.IoIstioWorkloadController.Name
	connectedAnnotation    = annotation.IoIstioConnectedAt.Name
	disconnectedAnnotation = annotation.IoIstioDisconnectedAt.Name
)

// EntryName is the name of the WorkloadEntry a proxy registers with its
// group: <group>-<first IP, colons as dashes>[-<network>], its last 253
// characters when longer (a Kubernetes name's limit). It is "" when the
// proxy names no group, or has no IP or namespace.
func EntryName(p *model.Proxy) string {
	md := p.Metadata
	if md == nil || md.AutoRegisterGroup == "" {
		return ""
	}
	if len(p.IPAddresses) == 0 {
		log.Errorf("auto-registration of %v failed: missing IP addresses", p.ID)
		return ""
	}
	if md.Namespace == "" {
		log.Errorf("auto-registration of %v failed: missing namespace", p.ID)
		return ""
	}
	parts := []string{md.AutoRegisterGroup, strings.ReplaceAll(p.IPAddresses[0], ":", "-")}
	if md.Network != "" {
		parts = append(parts, md.Network)
	}
	name := strings.Join(parts, "-")
	if len(name) > validation.DNS1123SubdomainMaxLength {
		name = name[len(name)-validation.DNS1123SubdomainMaxLength:]
		log.Warnf("WorkloadEntry name of %v too long: shortened from the start to %s; a shorter WorkloadGroup name avoids it", p.ID, name)
	}
	return name
}

// merged is a new map of the maps' entries, later maps winning.
func merged(ms ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, m := range ms {
		maps.Copy(out, m)
	}
	return out
}

// entryFromGroup is the WorkloadEntry a proxy gets from its group: the
// template, its address the proxy's first IP, its labels the template's
// under the group metadata's under the agent's (the istio-locality label
// dropped), its network and locality the proxy's when it has them; the
// group's metadata annotations with istio.io/autoRegistrationGroup, and
// the health-check annotation when the agent probes readiness; owned by
// the group. The connection annotations are set by the caller.
func entryFromGroup(name string, s streamInfo, group config.Config) config.Config {
	wg := group.Spec.(*networking.WorkloadGroup)
	spec := &networking.WorkloadEntry{}
	if wg.GetTemplate() != nil {
		spec = wg.GetTemplate().DeepCopy()
	}
	p := s.proxy
	spec.Address = p.IPAddresses[0]
	if wg.GetMetadata().GetLabels() != nil {
		spec.Labels = merged(spec.Labels, wg.GetMetadata().GetLabels())
	}
	// the agent's labels, not the proxy's: those come from the entry
	// being made
	if p.Metadata.Labels != nil {
		spec.Labels = merged(spec.Labels, p.Metadata.Labels)
		delete(spec.Labels, localityLabel)
	}
	ann := merged(map[string]string{groupAnnotation: group.Name}, wg.GetMetadata().GetAnnotations())
	if p.Metadata.Network != "" {
		spec.Network = p.Metadata.Network
	}
	if s.nodeLocality != "" {
		spec.Locality = s.nodeLocality
	}
	if hasReadinessProbe(p) {
		ann[HealthCheckAnnotation] = "true"
	}
	isController := true
	return config.Config{
		Meta: config.Meta{
			GroupVersionKind: gvk.WorkloadEntry,
			Name:             name,
			Namespace:        p.Metadata.Namespace,
			Labels:           spec.Labels,
			Annotations:      ann,
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: group.GroupVersionKind.GroupVersion(),
				Kind:       group.GroupVersionKind.Kind,
				Name:       group.Name,
				UID:        types.UID(group.UID),
				Controller: &isController,
			}},
		},
		Spec: spec,
	}
}

// hasReadinessProbe reports whether the agent's PROXY_CONFIG has a
// readiness probe (the agent then reports its result).
func hasReadinessProbe(p *model.Proxy) bool {
	return p.ProxyConfigOrDefault(nil).GetReadinessProbe() != nil
}

// setConnected writes the connection annotations of a connection to this
// replica at t.
func setConnected(c *config.Config, instance string, t time.Time) {
	if c.Annotations == nil {
		c.Annotations = map[string]string{}
	}
	c.Annotations[controllerAnnotation] = instance
	c.Annotations[connectedAnnotation] = t.Format(timeFormat)
	delete(c.Annotations, disconnectedAnnotation)
}

// canControl checks, when identities are validated, that the proxy proved
// the identity of the entry: its namespace, and its service account when
// the entry names one. The errors are Istio's.
func (c *Controller) canControl(p *model.Proxy, entry config.Config) error {
	if !c.opts.ValidateIdentity {
		return nil
	}
	id := p.VerifiedIdentity
	if id == nil {
		return fmt.Errorf("registration of WorkloadEntry requires a verified identity")
	}
	if id.Namespace != entry.Namespace {
		return fmt.Errorf("registration of WorkloadEntry namespace mismatch: %q vs %q", id.Namespace, entry.Namespace)
	}
	if sa := entry.Spec.(*networking.WorkloadEntry).GetServiceAccount(); sa != "" && id.ServiceAccount != sa {
		return fmt.Errorf("registration of WorkloadEntry service account mismatch: %q vs %q", id.ServiceAccount, sa)
	}
	return nil
}

// isAutoRegistered: the entry was made from a group.
func isAutoRegistered(e *config.Config) bool {
	return e != nil && e.Annotations[groupAnnotation] != ""
}

// isHealthChecked: an entry made by hand that a proxy has controlled.
func isHealthChecked(e *config.Config) bool {
	return e != nil && e.Annotations[controllerAnnotation] != "" && !isAutoRegistered(e)
}

// healthEligible: the entry takes health reports (the annotation present,
// whatever its value; only "true" makes the condition count in EDS).
func healthEligible(e *config.Config) bool {
	if e == nil {
		return false
	}
	_, ok := e.Annotations[HealthCheckAnnotation]
	return ok
}

// annotationTime parses a connection annotation (zero when absent or bad).
func annotationTime(e *config.Config, key string) (time.Time, bool) {
	t, err := time.Parse(timeFormat, e.Annotations[key])
	return t, err == nil
}
