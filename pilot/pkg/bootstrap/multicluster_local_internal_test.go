package bootstrap

import (
	"encoding/pem"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/meshplane/istiod/pkg/kube"
)

func TestLocalClusterSecretWatcherFromEnv(t *testing.T) {
	env := map[string]string{"LOCAL_CLUSTER_SECRET_WATCHER": "true", "KUBERNETES_SERVICE_HOST": "10.96.0.1", "KUBERNETES_SERVICE_PORT": "443"}
	o := DefaultMulticlusterOptions()
	if o.LocalClusterSecretWatcher {
		t.Fatal("on by default")
	}
	if err := MulticlusterFromEnv(func(k string) string { return env[k] }, &o); err != nil {
		t.Fatal(err)
	}
	if !o.LocalClusterSecretWatcher || o.InCluster != (kube.InCluster{Host: "10.96.0.1", Port: "443"}) {
		t.Errorf("options %+v", o)
	}
	env["LOCAL_CLUSTER_SECRET_WATCHER"] = "sometimes"
	if err := MulticlusterFromEnv(func(k string) string { return env[k] }, &o); err == nil || !strings.Contains(err.Error(), "LOCAL_CLUSTER_SECRET_WATCHER") {
		t.Errorf("error %v", err)
	}
}

// Which client reads the remote secrets, as Istio 1.31's NewController
// picks it: the config cluster's unless LOCAL_CLUSTER_SECRET_WATCHER and
// EXTERNAL_ISTIOD are both set and no kubeconfig directory is (it wins);
// then one of its own from the in-cluster config, which must build.
func TestSecretsClient(t *testing.T) {
	api := httptest.NewTLSServer(http.NotFoundHandler())
	defer api.Close()
	u, _ := url.Parse(api.URL)
	host, port, _ := net.SplitHostPort(u.Host)
	dir := t.TempDir()
	token, ca := filepath.Join(dir, "token"), filepath.Join(dir, "ca.crt")
	if err := os.WriteFile(token, []byte("sa-token"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: api.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	inCluster := kube.InCluster{Host: host, Port: port, TokenFile: token, CAFile: ca}
	config := kube.NewFakeClient()
	for _, tc := range []struct {
		name            string
		local, external bool
		path            string
		in              kube.InCluster
		wantOwn         bool
		wantErr         string
	}{
		{name: "default", in: inCluster},
		{name: "without EXTERNAL_ISTIOD", local: true, in: inCluster},
		{name: "EXTERNAL_ISTIOD alone", external: true, in: inCluster},
		{name: "both", local: true, external: true, in: inCluster, wantOwn: true},
		{name: "both, not in a cluster", local: true, external: true, wantErr: "LOCAL_CLUSTER_SECRET_WATCHER: the in-cluster config"},
		{name: "both, without a token", local: true, external: true, in: kube.InCluster{Host: host, Port: port, TokenFile: filepath.Join(dir, "none")},
			wantErr: "LOCAL_CLUSTER_SECRET_WATCHER"},
		{name: "the kubeconfig directory wins", local: true, external: true, path: dir},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := DefaultArgs()
			args.Multicluster.LocalClusterSecretWatcher, args.Multicluster.ExternalIstiod = tc.local, tc.external
			args.Multicluster.KubeconfigPath, args.Multicluster.InCluster = tc.path, tc.in
			s := newServer(args)
			s.kubeClient = config
			c, own, err := s.secretsClient(kube.Options{QPS: 7, Burst: 9})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if own != tc.wantOwn {
				t.Fatalf("own %v", own)
			}
			if !own {
				if c != config {
					t.Fatal("not the config cluster's client")
				}
				return
			}
			defer c.Close()
			cfg := c.RESTConfig()
			if cfg.Host != api.URL || cfg.BearerToken != "sa-token" || cfg.BearerTokenFile != token || cfg.CAFile != ca || cfg.QPS != 7 || cfg.Burst != 9 {
				t.Errorf("config %+v", cfg)
			}
		})
	}
}
