package autoregistration

import (
	"fmt"
	"time"

	"github.com/meshplane/istiod/pkg/config/schema/gvk"
)

// markConnected writes that the stream's entry is connected to this
// replica since the stream's connection, unless the entry says something
// newer: a disconnection after this connection (a slow connect), or a
// connection after it (the proxy is already on another replica). It
// reports whether it wrote. A stale read fails the update with a conflict,
// and the caller retries.
func (c *Controller) markConnected(s *streamInfo) (bool, error) {
	ns := s.proxy.Metadata.Namespace
	e := c.store.Get(gvk.WorkloadEntry, s.entry, ns)
	if e == nil {
		return false, fmt.Errorf("failed updating WorkloadEntry %s/%s: WorkloadEntry not found", ns, s.entry)
	}
	if t, ok := annotationTime(e, disconnectedAnnotation); ok && s.connectedAt.Before(t) {
		return false, nil
	}
	last, _ := annotationTime(e, connectedAnnotation)
	if s.connectedAt.Before(last) {
		return false, nil
	}
	if e.Annotations[controllerAnnotation] == c.opts.InstanceID && !s.connectedAt.After(last) {
		return false, nil // already written for this connection
	}
	updated := e.DeepCopy()
	setConnected(&updated, c.opts.InstanceID, s.connectedAt)
	if _, err := c.store.Update(updated); err != nil {
		return false, fmt.Errorf("failed updating WorkloadEntry %s/%s err: %v", ns, s.entry, err)
	}
	return true, nil
}

// disconnection is the end of the last stream of a proxy whose entry this
// replica controlled.
type disconnection struct {
	entry, namespace string
	autoCreated      bool
	connectedAt      time.Time
	disconnectedAt   time.Time
}

// unregister marks the entry disconnected, unless a newer connection (to
// this replica or another) has taken it, and schedules its cleanup after
// the grace period. A missing entry is an error, so that the queue retries
// a read that lags behind the create.
func (c *Controller) unregister(d disconnection) error {
	changed, err := c.markDisconnected(d)
	if err != nil {
		errorsTotal.Inc()
		return err
	}
	if !changed {
		return nil
	}
	log.Infof("updated WorkloadEntry %s/%s as disconnected", d.namespace, d.entry)
	if d.autoCreated {
		unregisterTotal.Inc()
	}
	c.cleanupAfter(c.opts.GracePeriod, d.namespace, d.entry)
	return nil
}

// cleanupAfter checks, once d has passed, whether the entry is still to be
// cleaned up (nobody reconnected it), and queues its cleanup if so.
func (c *Controller) cleanupAfter(d time.Duration, namespace, entry string) {
	t := &task{what: "clean up " + namespace + "/" + entry, run: func() error {
		e := c.store.Get(gvk.WorkloadEntry, entry, namespace)
		if e != nil && c.shouldCleanup(*e) {
			c.queueCleanup(*e, false)
		}
		return nil
	}}
	if d <= 0 {
		c.work.add(t)
		return
	}
	c.work.addAfter(d, t)
}

func (c *Controller) markDisconnected(d disconnection) (bool, error) {
	e := c.store.Get(gvk.WorkloadEntry, d.entry, d.namespace)
	if e == nil {
		return false, fmt.Errorf("workloadentry %s/%s is not found", d.namespace, d.entry)
	}
	last, ok := annotationTime(e, connectedAnnotation)
	if ok && last.After(d.connectedAt) {
		return false, nil // reconnected since
	}
	if e.Annotations[controllerAnnotation] != c.opts.InstanceID {
		return false, nil // another replica controls it now
	}
	if d.disconnectedAt.Before(last) {
		return false, nil
	}
	updated := e.DeepCopy()
	delete(updated.Annotations, connectedAnnotation)
	updated.Annotations[disconnectedAnnotation] = d.disconnectedAt.Format(timeFormat)
	if _, err := c.store.Update(updated); err != nil {
		return false, fmt.Errorf("disconnect: failed updating WorkloadEntry %s/%s: %v", d.namespace, d.entry, err)
	}
	return true, nil
}
