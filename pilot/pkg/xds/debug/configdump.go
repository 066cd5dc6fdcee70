package debug

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	adminv3 "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	wasm "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/wasm/v3"
	tls "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pilot/pkg/xds"
)

// errNotConnected says no proxy of that ID is connected here.
var errNotConnected = errors.New("not connected")

// The ambient types a ztunnel's config dump holds.
const (
	addressType  = "type.googleapis.com/istio.workload.Address"
	workloadType = "type.googleapis.com/istio.workload.Workload"
)

// shortTypes are the short type names ?types= takes, as Istio's
// GetResourceType: "eds" or the type URL itself.
var shortTypes = map[string]string{
	"cds": xds.ClusterType, "eds": xds.EndpointType, "lds": xds.ListenerType, "rds": xds.RouteType,
	"sds": xds.SecretType, "nds": model.NameTableTypeURL, "ecds": model.ExtensionConfigTypeURL,
	"wds": addressType,
}

// wasmSecretEnv is the Wasm VM environment variable that carries an image
// pull secret: redacted from dumps.
const wasmSecretEnv = "ISTIO_META_WASM_IMAGE_PULL_SECRET"

// generate builds what the proxy of connection c would be sent now of
// each type among types that it watches (a type it does not watch is left
// out, as Istio's dump does), secrets and Wasm pull secrets redacted.
func generate(src XDSSource, c xds.ConnectionSnapshot, types []string) (map[string][]*discovery.Resource, error) {
	out := map[string][]*discovery.Resource{}
	for _, t := range types {
		if !slices.ContainsFunc(c.Watches, func(w *xds.WatchedResource) bool { return w.TypeURL == t }) {
			continue
		}
		g, connected, err := src.GenerateFor(c.Proxy.ID, t)
		switch {
		case !connected:
			return nil, fmt.Errorf("proxy %s is %w", c.Proxy.ID, errNotConnected)
		case err != nil:
			return nil, fmt.Errorf("generating %s: %w", xds.ShortType(t), err)
		}
		for _, res := range g.Resources {
			if r := redact(t, res); r != nil {
				out[t] = append(out[t], r)
			}
		}
	}
	return out, nil
}

// redact returns res without its secrets: a secret's private key, a Wasm
// VM's pull secret (the resource becomes the Wasm config, as Istio's dump
// shows it). Generated resources are shared: what changes is a copy.
func redact(typeURL string, res *discovery.Resource) *discovery.Resource {
	switch typeURL {
	case xds.SecretType:
		secret := &tls.Secret{}
		if err := res.GetResource().UnmarshalTo(secret); err != nil {
			debugLog.Warnf("config dump: secret %s: %v", res.GetName(), err)
			return nil
		}
		if secret.GetTlsCertificate() == nil {
			return res
		}
		secret.GetTlsCertificate().PrivateKey = &core.DataSource{Specifier: &core.DataSource_InlineBytes{InlineBytes: []byte("[redacted]")}}
		a, err := anypb.New(secret)
		if err != nil {
			return nil
		}
		return &discovery.Resource{Name: res.GetName(), Version: res.GetVersion(), Resource: a}
	case model.ExtensionConfigTypeURL:
		tce := &core.TypedExtensionConfig{}
		if err := res.GetResource().UnmarshalTo(tce); err != nil {
			debugLog.Warnf("config dump: extension config %s: %v", res.GetName(), err)
			return nil
		}
		vm := &wasm.Wasm{}
		if !tce.GetTypedConfig().MessageIs(vm) {
			return res
		}
		if err := tce.GetTypedConfig().UnmarshalTo(vm); err != nil {
			return nil
		}
		if env := vm.GetConfig().GetVmConfig().GetEnvironmentVariables().GetKeyValues(); env != nil {
			if _, ok := env[wasmSecretEnv]; ok {
				env[wasmSecretEnv] = "<Redacted>"
			}
		}
		a, err := anypb.New(vm)
		if err != nil {
			return nil
		}
		return &discovery.Resource{Name: vm.GetConfig().GetName(), Resource: a}
	}
	return res
}

// configDump is what the proxy would be sent now, in the shape of Istio's
// dump: the sections of Envoy's admin config dump in Envoy's order
// (bootstrap and scoped routes empty, endpoints only with includeEDS),
// each entry with the push context's version.
func configDump(src XDSSource, c xds.ConnectionSnapshot, includeEDS bool) (*adminv3.ConfigDump, error) {
	gen, err := generate(src, c, []string{xds.ClusterType, xds.ListenerType, xds.RouteType, xds.SecretType, xds.EndpointType, model.ExtensionConfigTypeURL})
	if err != nil {
		return nil, err
	}
	version := ""
	if pc := src.PushContext(); pc != nil {
		version = pc.PushVersion()
	}
	clusters := &adminv3.ClustersConfigDump{VersionInfo: version}
	for _, res := range gen[xds.ClusterType] {
		clusters.DynamicActiveClusters = append(clusters.DynamicActiveClusters, &adminv3.ClustersConfigDump_DynamicCluster{Cluster: res.Resource})
	}
	listeners := &adminv3.ListenersConfigDump{VersionInfo: version}
	for _, res := range gen[xds.ListenerType] {
		listeners.DynamicListeners = append(listeners.DynamicListeners, &adminv3.ListenersConfigDump_DynamicListener{
			Name: res.Name, ActiveState: &adminv3.ListenersConfigDump_DynamicListenerState{Listener: res.Resource, VersionInfo: version}})
	}
	routes := &adminv3.RoutesConfigDump{}
	for _, res := range gen[xds.RouteType] {
		routes.DynamicRouteConfigs = append(routes.DynamicRouteConfigs, &adminv3.RoutesConfigDump_DynamicRouteConfig{VersionInfo: version, RouteConfig: res.Resource})
	}
	secrets := &adminv3.SecretsConfigDump{}
	for _, res := range gen[xds.SecretType] {
		secrets.DynamicActiveSecrets = append(secrets.DynamicActiveSecrets, &adminv3.SecretsConfigDump_DynamicSecret{VersionInfo: version, Secret: res.Resource})
	}
	extensions := &adminv3.EcdsConfigDump{}
	for _, res := range gen[model.ExtensionConfigTypeURL] {
		extensions.EcdsFilters = append(extensions.EcdsFilters, &adminv3.EcdsConfigDump_EcdsFilterConfig{VersionInfo: version, EcdsFilter: res.Resource})
	}
	sections := []proto.Message{&adminv3.BootstrapConfigDump{}, clusters}
	if includeEDS {
		endpoints := &adminv3.EndpointsConfigDump{}
		for _, res := range gen[xds.EndpointType] {
			endpoints.DynamicEndpointConfigs = append(endpoints.DynamicEndpointConfigs, &adminv3.EndpointsConfigDump_DynamicEndpointConfig{VersionInfo: version, EndpointConfig: res.Resource})
		}
		sections = append(sections, endpoints)
	}
	sections = append(sections, listeners, &adminv3.ScopedRoutesConfigDump{}, routes, secrets, extensions)
	dump := &adminv3.ConfigDump{}
	for _, m := range sections {
		a, err := anypb.New(m)
		if err != nil {
			return nil, err
		}
		dump.Configs = append(dump.Configs, a)
	}
	return dump, nil
}

// typedDump is a dump of some types only (?types=, edsz, ndsz, ecdsz): the
// resources themselves, as Istio's.
func typedDump(src XDSSource, c xds.ConnectionSnapshot, types []string) (*adminv3.ConfigDump, error) {
	gen, err := generate(src, c, types)
	if err != nil {
		return nil, err
	}
	dump := &adminv3.ConfigDump{}
	for _, t := range types {
		for _, res := range gen[t] {
			dump.Configs = append(dump.Configs, res.Resource)
		}
	}
	return dump, nil
}

// requestedTypes reads ?types=cds,eds (short names or type URLs); nil when
// absent.
func requestedTypes(r *http.Request) []string {
	q := r.URL.Query().Get("types")
	if q == "" {
		return nil
	}
	var out []string
	for _, t := range strings.Split(q, ",") {
		if full, ok := shortTypes[t]; ok {
			t = full
		}
		if !slices.Contains(out, t) {
			out = append(out, t)
		}
		if t == addressType && !slices.Contains(out, workloadType) {
			out = append(out, workloadType)
		}
	}
	return out
}

// configDumpHandler serves /debug/config_dump?proxyID=<pod>.<ns>
// (&include_eds, &types=).
func (d *Debug) configDumpHandler(w http.ResponseWriter, r *http.Request) {
	c, ok := d.proxyConnection(w, r)
	if !ok {
		return
	}
	var dump *adminv3.ConfigDump
	var err error
	switch types := requestedTypes(r); {
	case len(types) > 0:
		dump, err = typedDump(d.opts.XDS, c, types)
	case c.Proxy.Type == model.Ztunnel:
		dump, err = typedDump(d.opts.XDS, c, []string{addressType, workloadType})
	default:
		dump, err = configDump(d.opts.XDS, c, r.URL.Query().Has("include_eds"))
	}
	writeDump(w, dump, err)
}

// typedConfigDump serves the config dump of one short type (edsz, ndsz,
// ecdsz).
func (d *Debug) typedConfigDump(short string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		c, ok := d.proxyConnection(w, r)
		if !ok {
			return
		}
		dump, err := typedDump(d.opts.XDS, c, []string{shortTypes[short]})
		writeDump(w, dump, err)
	}
}

func writeDump(w http.ResponseWriter, dump *adminv3.ConfigDump, err error) {
	switch {
	case errors.Is(err, errNotConnected):
		http.Error(w, err.Error(), http.StatusNotFound)
	case err != nil:
		http.Error(w, err.Error(), http.StatusInternalServerError)
	default:
		writeProto(w, dump)
	}
}

func writeProto(w http.ResponseWriter, m proto.Message) {
	b, err := protojson.MarshalOptions{Multiline: true, Indent: "  "}.Marshal(m)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(b)
}
