package log

import (
	"fmt"
	"strings"
	"sync"

	"github.com/go-logr/logr"
	"k8s.io/klog/v2"
)

// KlogScope is the scope of the Kubernetes client libraries' messages
// (klog), as in Istio.
var KlogScope = RegisterScope("klog", "Kubernetes client library (klog) messages")

var redirectKlog sync.Once

// klog goes through KlogScope from the start: set later (at the first
// Configure), klog's logger would be written while the client libraries'
// goroutines of whoever started them first (a test's informers) read it.
func init() { redirectKlog.Do(setKlogLogger) }

func setKlogLogger() { klog.SetLogger(logr.New(&klogSink{s: KlogScope})) }

// klogSink is a logr.LogSink writing through a scope, with Istio's mapping
// (its logr adapter): verbosity 0 to 3 is info, above is debug; errors are
// errors, "<err>: <msg>".
type klogSink struct {
	s  *Scope
	kv []any
}

const klogDebugAbove = 3

func (k *klogSink) Init(logr.RuntimeInfo) {}

func (k *klogSink) Enabled(level int) bool {
	if level > klogDebugAbove {
		return k.s.Enabled(DebugLevel)
	}
	return k.s.Enabled(InfoLevel)
}

func (k *klogSink) Info(level int, msg string, kv ...any) {
	l := InfoLevel
	if level > klogDebugAbove {
		l = DebugLevel
	}
	k.s.logkv(2, l, strings.TrimSuffix(msg, "\n"), append(k.kv[:len(k.kv):len(k.kv)], kv...))
}

func (k *klogSink) Error(err error, msg string, kv ...any) {
	msg = strings.TrimSuffix(msg, "\n")
	if err != nil {
		msg = fmt.Sprintf("%v: %s", err, msg)
	}
	k.s.logkv(2, ErrorLevel, msg, append(k.kv[:len(k.kv):len(k.kv)], kv...))
}

func (k *klogSink) WithValues(kv ...any) logr.LogSink {
	return &klogSink{s: k.s, kv: append(k.kv[:len(k.kv):len(k.kv)], kv...)}
}

func (k *klogSink) WithName(string) logr.LogSink { return k }
