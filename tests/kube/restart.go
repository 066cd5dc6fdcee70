package kube

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// StopAPIServer stops kube-apiserver (gracefully, as a rolling restart does)
// and leaves etcd running, so that StartAPIServer brings the same cluster
// back. Only a server of Start can be stopped: the Shared one serves other
// tests.
func (e *Env) StopAPIServer(t testing.TB) {
	t.Helper()
	if e.shared {
		t.Fatal("kube: StopAPIServer on the shared server; use kube.Start for an outage test")
	}
	e.apiMu.Lock()
	defer e.apiMu.Unlock()
	if e.apiStopped {
		t.Fatal("kube: StopAPIServer: already stopped")
	}
	if err := e.env.ControlPlane.APIServer.Stop(); err != nil {
		t.Fatalf("kube: stopping kube-apiserver: %v\nlast control-plane output:\n%s", err, e.logs.String())
	}
	e.apiStopped = true
}

// StartAPIServer starts kube-apiserver again after StopAPIServer, on the
// same address, with the same certificates (the RESTConfig and the
// kubeconfig file stay valid) and the same etcd, and waits until /readyz
// answers ok.
func (e *Env) StartAPIServer(t testing.TB) {
	t.Helper()
	e.apiMu.Lock()
	defer e.apiMu.Unlock()
	if !e.apiStopped {
		t.Fatal("kube: StartAPIServer: not stopped")
	}
	api := e.env.ControlPlane.APIServer
	if err := api.Start(); err != nil {
		t.Fatalf("kube: restarting kube-apiserver on %s: %v\nlast control-plane output:\n%s", e.RESTConfig.Host, err, e.logs.String())
	}
	e.apiStopped = false
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	for {
		body, err := e.Kube.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		if err == nil && string(body) == "ok" {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("kube: restarted kube-apiserver not ready: %v %s", err, body)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// WithAuditLog makes the API server record every request it receives
// (metadata only) in an audit log that Env.AuditLog reads, so that a test
// can count the lists and watches a client made.
func WithAuditLog() Option { return func(o *options) { o.audit = true } }

// auditPolicy records each request when it is received and when its
// response starts (watches) or completes (the others), for the code.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["Panic"]
rules:
- level: Metadata
`

// configureAudit writes the audit policy into dir and points api at it;
// it returns the path of the log.
func configureAudit(api *envtest.APIServer, dir string) (string, error) {
	policy := filepath.Join(dir, "audit-policy.yaml")
	if err := os.WriteFile(policy, []byte(auditPolicy), 0o600); err != nil {
		return "", err
	}
	log := filepath.Join(dir, "audit.log")
	api.Configure().
		Set("audit-policy-file", policy).
		Set("audit-log-path", log).
		// write each event at once: the test reads the log right after
		// the requests it counts
		Set("audit-log-mode", "blocking").
		Set("audit-log-maxbackup", "0")
	return log, nil
}

// Request is one request received by the API server, from the audit log.
type Request struct {
	Verb      string // get, list, watch, create, update, patch, delete…
	URI       string // path and query
	Query     url.Values
	UserAgent string
	User      string
	Resource  string // e.g. "virtualservices"
	Group     string // "" for the core group
	Received  time.Time
	// Code is the HTTP status of the response (0: none recorded yet). A
	// watch that fails after it started streaming (for example "too old
	// resource version") reports its error in the stream, with code 200.
	Code int
}

// ReadsAll reports whether the request reads a whole collection from the
// server: a LIST, or a WATCH that starts by sending every current object
// (client-go's streaming watch-list, sendInitialEvents=true). A watch that
// resumes from a resourceVersion does not.
func (r Request) ReadsAll() bool {
	return r.Verb == "list" || (r.Verb == "watch" && r.Query.Get("sendInitialEvents") == "true")
}

// AuditLog returns every request the API server received so far, in the
// order received (across restarts). The Env needs WithAuditLog.
func (e *Env) AuditLog(t testing.TB) []Request {
	t.Helper()
	if e.auditLog == "" {
		t.Fatal("kube: AuditLog needs kube.Start(t, kube.WithAuditLog())")
	}
	f, err := os.Open(e.auditLog)
	if err != nil {
		t.Fatalf("kube: audit log: %v", err)
	}
	defer f.Close()
	var out []Request
	byID := map[string]int{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	for sc.Scan() {
		var ev struct {
			AuditID    string `json:"auditID"`
			Stage      string `json:"stage"`
			Verb       string `json:"verb"`
			RequestURI string `json:"requestURI"`
			UserAgent  string `json:"userAgent"`
			User       struct {
				Username string `json:"username"`
			} `json:"user"`
			ObjectRef struct {
				Resource string `json:"resource"`
				APIGroup string `json:"apiGroup"`
			} `json:"objectRef"`
			Received time.Time `json:"requestReceivedTimestamp"`
			Response struct {
				Code int `json:"code"`
			} `json:"responseStatus"`
		}
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("kube: audit log line %q: %v", sc.Text(), err)
		}
		if ev.Stage != "RequestReceived" {
			if i, ok := byID[ev.AuditID]; ok && out[i].Code == 0 {
				out[i].Code = ev.Response.Code
			}
			continue
		}
		u, err := url.ParseRequestURI(ev.RequestURI)
		if err != nil {
			t.Fatalf("kube: audit log URI %q: %v", ev.RequestURI, err)
		}
		byID[ev.AuditID] = len(out)
		out = append(out, Request{Verb: ev.Verb, URI: ev.RequestURI, Query: u.Query(), UserAgent: ev.UserAgent,
			User: ev.User.Username, Resource: ev.ObjectRef.Resource, Group: ev.ObjectRef.APIGroup, Received: ev.Received})
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("kube: audit log: %v", err)
	}
	return out
}

// String names a request for failure messages.
func (r Request) String() string {
	return fmt.Sprintf("%s %s (%s): %d", r.Verb, r.URI, r.UserAgent, r.Code)
}
