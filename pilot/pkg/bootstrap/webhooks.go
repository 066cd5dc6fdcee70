package bootstrap

import (
	"context"
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
	"github.com/meshplane/istiod/pkg/security/ca"
	"github.com/meshplane/istiod/pkg/webhooks/validation/server"
)

// webhooks is the HTTPS server on --httpsAddr (Istio's 15017): the config
// validation webhook and the sidecar injection webhook, with istiod's
// serving certificate (the one 15012 presents).
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

// startWebhooks binds --httpsAddr when the CA and serving certificate exist
// (--secureGRPCAddr set) and the address is not empty.
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
	srv := &http.Server{Handler: mux, TLSConfig: ca.ServerTLSConfig(s.secure.ca, s.secure.serving),
		ReadHeaderTimeout: 10 * time.Second}
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
