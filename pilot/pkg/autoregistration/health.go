package autoregistration

import (
	"fmt"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"
	metav1alpha1 "istio.io/api/meta/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/config/schema/gvk"
)

// ConditionHealthy is the type of the condition a WorkloadEntry's health
// reports write.
const ConditionHealthy = "Healthy"

// OnHealth queues a health report of a stream as its entry's Healthy
// condition: True, or False with the agent's message; probed and changed
// now (the agent reports transitions only).
func (c *Controller) OnHealth(s model.ProxyStream, healthy bool, message string) {
	if c == nil || !c.opts.HealthChecks {
		return
	}
	info := c.stream(s.ID)
	if info == nil {
		log.Errorf("unable to derive WorkloadEntry for health update for %v", s.Proxy.ID)
		return
	}
	now := timestamppb.New(c.clk.Now())
	cond := &metav1alpha1.IstioCondition{Type: ConditionHealthy, Status: "True", LastProbeTime: now, LastTransitionTime: now}
	if !healthy {
		cond.Status, cond.Message = "False", message
	}
	ns := info.proxy.Metadata.Namespace
	c.work.add(&task{what: "health of " + ns + "/" + info.entry, run: func() error {
		return c.updateHealth(s.Proxy.ID, info.entry, ns, cond)
	}})
}

// updateHealth writes the condition into the entry's status, when this
// replica controls the entry and the entry holds no newer probe.
func (c *Controller) updateHealth(proxyID, entry, ns string, cond *metav1alpha1.IstioCondition) error {
	e := c.store.Get(gvk.WorkloadEntry, entry, ns)
	if e == nil {
		return fmt.Errorf("failed to update health status for %v: WorkloadEntry %v not found", proxyID, ns)
	}
	if e.Annotations[controllerAnnotation] != c.opts.InstanceID {
		return nil // the proxy is on another replica now
	}
	if old := healthCondition(e); old != nil && old.GetLastProbeTime().AsTime().After(cond.LastProbeTime.AsTime()) {
		return nil
	}
	updated := withCondition(*e, cond)
	if _, err := c.store.UpdateStatus(updated); err != nil {
		return fmt.Errorf("error while updating WorkloadEntry health status for %s: %w", proxyID, err)
	}
	log.Debugf("updated health status of %v to %v", proxyID, cond)
	return nil
}

// deleteHealthCondition removes the Healthy condition of an entry whose
// proxy is gone (its health is no longer known).
func (c *Controller) deleteHealthCondition(e config.Config) error {
	st, ok := e.Status.(*metav1alpha1.IstioStatus)
	if !ok || healthCondition(&e) == nil {
		return nil
	}
	st = proto.Clone(st).(*metav1alpha1.IstioStatus)
	kept := st.Conditions[:0]
	for _, cd := range st.Conditions {
		if cd.GetType() != ConditionHealthy {
			kept = append(kept, cd)
		}
	}
	st.Conditions = kept
	updated := e.DeepCopy()
	updated.Status = st
	if _, err := c.store.UpdateStatus(updated); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("error while removing WorkloadEntry health status for %s/%s: %v", e.Namespace, e.Name, err)
	}
	return nil
}

// healthCondition is the entry's Healthy condition (nil: none).
func healthCondition(e *config.Config) *metav1alpha1.IstioCondition {
	st, ok := e.Status.(*metav1alpha1.IstioStatus)
	if !ok {
		return nil
	}
	for _, cd := range st.GetConditions() {
		if cd.GetType() == ConditionHealthy {
			return cd
		}
	}
	return nil
}

func hasHealthCondition(e *config.Config) bool { return healthCondition(e) != nil }

// withCondition is a copy of the entry with the condition replacing the
// one of its type, or added after the others.
func withCondition(e config.Config, cond *metav1alpha1.IstioCondition) config.Config {
	out := e.DeepCopy()
	st, _ := out.Status.(*metav1alpha1.IstioStatus)
	if st == nil {
		st = &metav1alpha1.IstioStatus{}
	} else {
		st = proto.Clone(st).(*metav1alpha1.IstioStatus)
	}
	replaced := false
	for i, cd := range st.Conditions {
		if cd.GetType() == cond.Type {
			st.Conditions[i], replaced = cond, true
			break
		}
	}
	if !replaced {
		st.Conditions = append(st.Conditions, cond)
	}
	out.Status = st
	return out
}
