package bootstrap

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/meshplane/istiod/pilot/pkg/config/kube/crd"
	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/config/schema/collections"
	"github.com/meshplane/istiod/pkg/config/validation"
	"github.com/meshplane/istiod/pkg/webhooks/validation/server"
)

// webhooks is the HTTPS server on --httpsAddr (Istio's 15017): the config
// validation webhook and the sidecar injection webhook, with istiod's
// serving certificate (the one 15012 presents: its CA's, or the files of
// --tlsCertFile, see tlsfiles.go).
type webhooks struct {
	srv      *http.Server
	listener net.Listener
}

// startSecureAndWebhooks starts the TLS gRPC port, then the webhook server.
func (s *Server) startSecureAndWebhooks() error {
	if err := s.startSecurity(); err != nil {
		return err
	}
	return s.startWebhooks()
}

// startWebhooks binds --httpsAddr unless it is empty, as Istio serves
// 15017 whether or not its TLS gRPC port is on: the CA and serving
// certificate exist whenever it is set (initSecurity).
func (s *Server) startWebhooks() error {
	if s.secure == nil || s.args.HTTPSAddr == "" {
		return nil
	}
	wh, err := server.New(server.Options{Validate: webhookValidator(s.args.Domain), Revision: s.args.Revision})
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	wh.Register(mux)
	s.injection.register(mux)
	l, err := net.Listen("tcp", s.args.HTTPSAddr)
	if err != nil {
		return fmt.Errorf("--httpsAddr %s: %v", s.args.HTTPSAddr, err)
	}
	srv := newWebhookServer(mux, s.secure.serverTLSConfig(s.args.TLS), defaultWebhookTimeouts)
	if !http2Allowed(s.args.TLS) {
		// net/http would refuse to serve at all; the API server speaks
		// HTTP/1.1 to webhooks as well
		scope.Warnf("--tls-cipher-suites has neither TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256 nor TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, " +
			"which HTTP/2 requires: the webhook server on --httpsAddr speaks HTTP/1.1 only")
		srv.TLSConfig = http1Only(srv.TLSConfig)
		srv.TLSNextProto = map[string]func(*http.Server, *tls.Conn, http.Handler){}
	}
	s.webhooks = &webhooks{srv: srv, listener: l}
	scope.Infof("webhook https server listening on %s", l.Addr())
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		if err := srv.ServeTLS(l, "", ""); err != nil && !errors.Is(err, http.ErrServerClosed) {
			scope.Errorf("webhook https server: %v", err)
		}
	}()
	return nil
}

// webhookTimeouts bound what a webhook connection may hold: ReadHeader the
// request line and headers, Read the whole request (from the accept, or
// from the end of the previous response; the TLS handshake included), Idle
// the wait for the next request of a keep-alive connection.
type webhookTimeouts struct {
	ReadHeader, Read, Idle time.Duration
}

// defaultWebhookTimeouts: the API server gives a webhook call at most 30s,
// so a request still unread after that is never answered in time; idle
// connections outlive the 90s after which Go clients such as the API
// server drop theirs, so that a client never sends on a connection the
// server is closing.
var defaultWebhookTimeouts = webhookTimeouts{ReadHeader: 10 * time.Second, Read: 30 * time.Second, Idle: 120 * time.Second}

// newWebhookServer is the 15017 server: request bodies are bounded by the
// handlers, reading them by t.
func newWebhookServer(h http.Handler, tlsConfig *tls.Config, t webhookTimeouts) *http.Server {
	return &http.Server{Handler: h, TLSConfig: tlsConfig,
		ReadHeaderTimeout: t.ReadHeader, ReadTimeout: t.Read, IdleTimeout: t.Idle}
}

// shutdown drains the webhook server (nil-safe).
func (w *webhooks) shutdown(ctx context.Context) {
	if w == nil {
		return
	}
	if err := w.srv.Shutdown(ctx); err != nil {
		scope.Warnf("shutdown: webhook server: %v", err)
	}
}

// HTTPSAddr is the bound address of the webhook HTTPS server ("" when it
// does not run).
func (s *Server) HTTPSAddr() string {
	if s.webhooks == nil {
		return ""
	}
	return s.webhooks.listener.Addr().String()
}

// webhookValidator validates an admission request's object as `istiod
// validate` does: decoded into its kind (looked up by group and kind, any
// version, as Istio), then the kind's validation; dropped unknown fields
// and validation warnings are warnings.
func webhookValidator(domain string) server.Validator {
	schemas := collections.PilotGatewayAPI()
	return func(gvk config.GroupVersionKind, raw []byte) ([]string, error) {
		sch, ok := schemas.FindByGroupKind(gvk)
		if !ok {
			return nil, server.ErrUnknownKind
		}
		var obj crd.IstioKind
		if err := json.Unmarshal(raw, &obj); err != nil {
			return nil, &server.DecodeError{Err: err}
		}
		cfg, dropped, err := crd.Convert(sch, &obj, domain)
		if err != nil {
			return nil, &server.DecodeError{Err: err}
		}
		var warnings []string
		for _, p := range dropped {
			warnings = append(warnings, fmt.Sprintf("unknown field %q dropped", p))
		}
		warn, err := sch.ValidateConfig(*cfg)
		for _, w := range validation.Problems(warn) {
			warnings = append(warnings, w.Error())
		}
		return warnings, err
	}
}
