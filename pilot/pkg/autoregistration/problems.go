package autoregistration

import (
	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pkg/diag"
)

// problemSource is the source of the refusals on /debug/warningz.
const problemSource = "autoregistration"

// maxRefused bounds the refusals listed at once (one per proxy); more are
// logged only.
const maxRefused = 1000

// subjectOf is a proxy's subject on the board: namespace/group-or-entry/ip
// [/network].
func subjectOf(p *model.Proxy) string {
	k := keyOf(p)
	name := k.group
	if name == "" {
		name = p.Metadata.WorkloadEntry
	}
	s := k.namespace + "/" + name + "/" + k.ip
	if k.network != "" {
		s += "/" + k.network
	}
	return s
}

// refuse lists a refused registration until the proxy connects again
// successfully.
func (c *Controller) refuse(p *model.Proxy, object string, err error) {
	log.Warnf("refused xDS stream of %s: %v", p.ID, err)
	if c.opts.Problems == nil {
		return
	}
	subject := subjectOf(p)
	c.mu.Lock()
	_, known := c.refused[subject]
	full := !known && len(c.refused) >= maxRefused
	if !full {
		c.refused[subject] = struct{}{}
	}
	c.mu.Unlock()
	if full {
		return
	}
	c.opts.Problems.Report(problemSource, subject, []diag.Problem{{Severity: diag.Error, Object: object,
		Message: "proxy " + p.ID + " refused: " + err.Error()}})
}

// accepted clears the proxy's refusal, if any.
func (c *Controller) accepted(p *model.Proxy) {
	if c.opts.Problems == nil {
		return
	}
	subject := subjectOf(p)
	c.mu.Lock()
	_, known := c.refused[subject]
	delete(c.refused, subject)
	c.mu.Unlock()
	if known {
		c.opts.Problems.Clear(problemSource, subject)
	}
}
