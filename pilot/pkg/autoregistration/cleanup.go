package autoregistration

import (
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/config/schema/gvk"
)

// shouldCleanup: the entry is auto-registered, or health-checked with a
// Healthy condition, and it has been disconnected for the grace period,
// or marked connected for longer than any connection lives (its replica
// went away before it could mark it disconnected).
func (c *Controller) shouldCleanup(e config.Config) bool {
	if !isAutoRegistered(&e) && !(isHealthChecked(&e) && hasHealthCondition(&e)) {
		return false
	}
	if e.Annotations[connectedAnnotation] != "" {
		at, ok := annotationTime(&e, connectedAnnotation)
		return ok && uint64(c.clk.Since(at)) > uint64(c.maxAge)
	}
	if e.Annotations[disconnectedAnnotation] == "" {
		return false
	}
	if at, ok := annotationTime(&e, disconnectedAnnotation); ok && c.clk.Since(at) < c.opts.GracePeriod {
		return false
	}
	return true
}

// queueCleanup queues the deletion of an auto-registered entry, or the
// removal of a health-checked entry's Healthy condition.
func (c *Controller) queueCleanup(e config.Config, periodic bool) {
	c.cleanup.add(&task{what: "clean up " + e.Namespace + "/" + e.Name, run: func() error {
		c.cleanupEntry(e, periodic)
		return nil
	}})
}

// cleanupEntry waits for the rate limit (Istio's 20 a second, burst 1, on
// the controller's clock) and cleans the entry up; failures are logged and
// left to the periodic sweep.
func (c *Controller) cleanupEntry(e config.Config, periodic bool) {
	now := c.clk.Now()
	if d := c.cleanupLimit.ReserveN(now, 1).DelayFrom(now); d > 0 {
		select {
		case <-c.stop:
			return
		case <-c.clk.After(d):
		}
	}
	switch {
	case isAutoRegistered(&e):
		rv := e.ResourceVersion
		var pre *string
		if rv != "" {
			pre = &rv
		}
		if err := c.store.Delete(gvk.WorkloadEntry, e.Name, e.Namespace, pre); err != nil && !apierrors.IsNotFound(err) {
			log.Warnf("failed cleaning up auto-registered WorkloadEntry %s/%s: %v", e.Namespace, e.Name, err)
			errorsTotal.Inc()
			return
		}
		deletesTotal.Inc()
		log.Infof("cleaned up auto-registered WorkloadEntry %s/%s periodic:%v", e.Namespace, e.Name, periodic)
	case isHealthChecked(&e) && hasHealthCondition(&e):
		if err := c.deleteHealthCondition(e); err != nil {
			log.Warnf("failed cleaning up health-checked WorkloadEntry %s/%s: %v", e.Namespace, e.Name, err)
			return
		}
		log.Infof("cleaned up health-checked WorkloadEntry %s/%s periodic:%v", e.Namespace, e.Name, periodic)
	}
}

// sweepPeriod is how often every entry is checked for cleanup: ten grace
// periods, as in Istio.
func (c *Controller) sweepPeriod() time.Duration { return 10 * c.opts.GracePeriod }

// periodicCleanup cleans up, every sweep period, the entries that should
// be (those whose replica went away included).
func (c *Controller) periodicCleanup(stop <-chan struct{}) {
	for {
		select {
		case <-stop:
			return
		case <-c.clk.After(c.sweepPeriod()):
		}
		for _, e := range c.store.List(gvk.WorkloadEntry, "") {
			if c.shouldCleanup(e) {
				c.queueCleanup(e, true)
			}
		}
	}
}

// startupCleanup, once the store has synced, takes up the entries the
// annotations say this replica controls but no stream of it does: a
// previous run of this replica (same pod name) left them when it stopped.
// One still marked connected (the run ended before it could write the
// disconnection) is marked disconnected now; one marked disconnected has
// lost the timer of its grace period with that run. Either is cleaned up
// once its grace period has passed unless its proxy reconnects, here or
// elsewhere. Istio leaves both to the periodic sweep (ten grace periods,
// and 1.5 × the maximum connection age for a connected one).
func (c *Controller) startupCleanup(stop <-chan struct{}) {
	for c.opts.Synced != nil && !c.opts.Synced() {
		select {
		case <-stop:
			return
		case <-c.clk.After(100 * time.Millisecond):
		}
	}
	now := c.clk.Now()
	for _, e := range c.store.List(gvk.WorkloadEntry, "") {
		if e.Annotations[controllerAnnotation] != c.opts.InstanceID {
			continue
		}
		if !isAutoRegistered(&e) && !isHealthChecked(&e) {
			continue
		}
		if c.controls(e.Namespace, e.Name) {
			continue
		}
		if e.Annotations[connectedAnnotation] == "" {
			if at, ok := annotationTime(&e, disconnectedAnnotation); ok {
				log.Infof("WorkloadEntry %s/%s was disconnected from this replica before it started: cleaning it up after its grace period",
					e.Namespace, e.Name)
				c.cleanupAfter(max(0, c.opts.GracePeriod-now.Sub(at)), e.Namespace, e.Name)
			}
			continue
		}
		at, _ := annotationTime(&e, connectedAnnotation)
		d := disconnection{entry: e.Name, namespace: e.Namespace, autoCreated: isAutoRegistered(&e), connectedAt: at, disconnectedAt: now}
		log.Infof("WorkloadEntry %s/%s was connected to this replica before it started: marking it disconnected", e.Namespace, e.Name)
		c.queueDisconnect(d)
	}
}
