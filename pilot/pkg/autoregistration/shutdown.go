package autoregistration

import "time"

// finishBudget bounds the wait for the disconnections written as the
// replica stops.
const finishBudget = 5 * time.Second

func pendingKey(d disconnection) string { return d.namespace + "/" + d.entry }

// queueDisconnect queues the writing of a disconnection, and keeps it as
// pending until it is written or given up.
func (c *Controller) queueDisconnect(d disconnection) {
	c.mu.Lock()
	c.pending[pendingKey(d)] = d
	c.mu.Unlock()
	done := func() {
		c.mu.Lock()
		if c.pending[pendingKey(d)] == d {
			delete(c.pending, pendingKey(d))
		}
		c.mu.Unlock()
	}
	c.work.add(&task{what: "disconnect " + d.namespace + "/" + d.entry, dropped: done, run: func() error {
		err := c.unregister(d)
		if err == nil {
			done()
		}
		return err
	}})
}

// finish, once Run's goroutines have stopped, marks disconnected (now) the
// entries this replica still controls: those of the streams it still
// holds, and those whose disconnection was queued and not written. A
// replica stops after draining its streams, and the disconnections the
// drain queues would otherwise be dropped with the queue, leaving the
// entries marked connected to a replica that is gone: with a new pod
// name, nothing would clean them up before the periodic sweep finds them
// connected for 1.5 × the maximum connection age (what Istio, whose
// queue stops before its streams are drained, does). Marked disconnected,
// any replica's sweep removes them after the grace period unless their
// proxy reconnects, and the checks of markDisconnected leave alone the
// entries another replica has taken over meanwhile. No cleanup is
// scheduled here: the replica is stopping.
func (c *Controller) finish() {
	now := c.clk.Now()
	c.mu.Lock()
	items := make(map[string]disconnection, len(c.pending)+len(c.streams))
	for k, d := range c.pending {
		items[k] = d
	}
	for _, s := range c.streams {
		d := disconnection{entry: s.entry, namespace: s.proxy.Metadata.Namespace, autoCreated: s.autoCreated,
			connectedAt: s.connectedAt, disconnectedAt: now}
		if old, ok := items[pendingKey(d)]; !ok || old.connectedAt.Before(d.connectedAt) {
			items[pendingKey(d)] = d
		}
	}
	c.mu.Unlock()
	if len(items) == 0 {
		return
	}
	// a write waits for the API server up to the store's timeout: the
	// stop waits for the writes up to finishBudget, then leaves what is
	// still in flight to finish (or fail) on its own
	done := make(chan struct{})
	go func() {
		defer close(done)
		for _, d := range items {
			changed, err := c.markDisconnected(d)
			switch {
			case err != nil:
				log.Warnf("stopping: %v", err)
			case changed:
				log.Infof("stopping: updated WorkloadEntry %s/%s as disconnected", d.namespace, d.entry)
			}
		}
	}()
	select {
	case <-done:
	case <-c.clk.After(finishBudget):
		log.Warnf("stopping: not all of %d WorkloadEntries marked disconnected within %v", len(items), finishBudget)
	}
}
