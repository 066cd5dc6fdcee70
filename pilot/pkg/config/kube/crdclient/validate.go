package crdclient

import (
	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/config/validation"
	"github.com/meshplane/istiod/pkg/diag"
	"github.com/meshplane/istiod/pkg/monitoring"
)

// problemSource is the warningz source of objects from the API server.
const problemSource = "kubernetes"

// validate runs the kind's validation on an object from the API server,
// exactly as the directory source and `istiod validate` do: an error
// rejects it (a create is not served, an update leaves the last good
// version serving), warnings annotate it. Either way the object's problems
// replace its earlier ones on the board; a rejection is logged at WARN once
// per object and reason, and counted. It reports whether cfg may be served.
func (k *kindState) validate(cfg config.Config) bool {
	key := configKey(cfg)
	subject := k.schema.Kind() + " " + key
	warn, err := k.schema.ValidateConfig(cfg)
	var problems []diag.Problem
	for _, w := range validation.Problems(warn) {
		problems = append(problems, diag.Problem{Severity: diag.Warning, Object: subject, Message: w.Error()})
	}
	if err != nil {
		msg := "rejected: " + err.Error()
		if k.cl.opts.Problems != nil {
			problems = append(problems, diag.Problem{Severity: diag.Error, Object: subject, Message: msg})
		}
		k.mu.Lock()
		first := k.rejected[key] != msg || k.rejectedUID[key] != cfg.UID
		k.rejected[key] = msg
		k.rejectedUID[key] = cfg.UID
		k.mu.Unlock()
		_, recorded := k.cl.lastGood.lookup(k.schema.GroupVersionKind(), key, cfg.UID)
		serving := recorded || k.collection.GetKey(key) != nil
		if first {
			monitoring.RejectedConfigs.WithLabelValues(problemSource, "invalid").Inc()
			if serving {
				scope.Warnf("%s: %s (the last valid version keeps serving)", subject, msg)
			} else {
				scope.Warnf("%s: %s (not served)", subject, msg)
			}
		}
		if first {
			k.cl.lastGood.changed()
		}
	} else {
		k.mu.Lock()
		_, was := k.rejected[key]
		delete(k.rejected, key)
		delete(k.rejectedUID, key)
		k.mu.Unlock()
		if was {
			k.cl.lastGood.changed()
		}
	}
	k.report(subject, problems)
	return err == nil
}

// forget clears an object's problems (it was deleted or left the scope).
func (k *kindState) forget(key string) {
	k.mu.Lock()
	_, was := k.rejected[key]
	delete(k.rejected, key)
	delete(k.rejectedUID, key)
	k.mu.Unlock()
	if was {
		k.cl.lastGood.changed()
	}
	k.report(k.schema.Kind()+" "+key, nil)
}

func (k *kindState) report(subject string, problems []diag.Problem) {
	if b := k.cl.opts.Problems; b != nil {
		b.Report(problemSource, subject, problems)
	}
}

// configKey is the collection key of a config: namespace/name, as
// objectKey of its object.
func configKey(c config.Config) string {
	if c.Namespace == "" {
		return c.Name
	}
	return c.Namespace + "/" + c.Name
}
