package debug

import (
	"errors"
	"slices"
	"strings"

	adminv3 "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	statusv3 "github.com/envoyproxy/go-control-plane/envoy/service/status/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pilot/pkg/xds"
	"github.com/meshplane/istiod/pkg/protoconv"
)

// The debug types istioctl asks for over ADS.
const (
	// TypeDebugSyncz lists the connected proxies and, per type, whether
	// they acknowledged the last response (istioctl proxy-status).
	TypeDebugSyncz = "istio.io/debug/syncz"
	// TypeDebugConfigDump is what one proxy (the resource name) would be
	// sent now, as ConfigDump sections (istioctl proxy-config).
	TypeDebugConfigDump = "istio.io/debug/config_dump"
)

// XDSGenerators serve the debug types over ADS. Only callers that proved
// an identity over TLS are answered (the plaintext port refuses them with
// Unauthenticated, "authentication required", as Istio's istiod does); a
// caller of the system namespace sees every proxy, any other caller the
// proxies of its own namespace only.
type XDSGenerators struct {
	// Server is whose connections are reported.
	Server interface {
		XDSSource
		RegisterGenerator(typeURL string, g xds.Generator)
	}
	// SystemNamespace is istiod's namespace (istio-system).
	SystemNamespace string
}

// Register installs the debug types on the server.
func (g *XDSGenerators) Register() {
	g.Server.RegisterGenerator(TypeDebugSyncz, xds.GeneratorFunc(g.syncz))
	g.Server.RegisterGenerator(TypeDebugConfigDump, xds.GeneratorFunc(g.configDump))
}

var errAuthRequired = status.Error(codes.Unauthenticated, "authentication required")

// sees reports whether the caller may see the proxies of namespace ns.
func (g *XDSGenerators) sees(caller *model.Proxy, ns string) bool {
	id := caller.VerifiedIdentity
	return id.Namespace == g.SystemNamespace || id.Namespace == ns
}

func (g *XDSGenerators) syncz(caller *model.Proxy, _ *xds.WatchedResource, _ *model.PushRequest) (xds.Generated, error) {
	if caller.VerifiedIdentity == nil {
		return xds.Generated{}, errAuthRequired
	}
	var out xds.Generated
	for _, c := range g.Server.ConnectionSnapshots() {
		p := c.Proxy
		// nodes without PROXY_CONFIG are not proxies (istioctl itself),
		// but for ztunnels
		isProxy := p.Metadata != nil && (p.Metadata.Raw["PROXY_CONFIG"] != nil || p.Type == model.Ztunnel)
		if !isProxy || !g.sees(caller, p.ConfigNamespace) {
			continue
		}
		cc := &statusv3.ClientConfig{Node: &core.Node{Id: p.ID, Metadata: syncMetadata(p)}}
		for _, w := range c.Watches {
			pc := &statusv3.ClientConfig_GenericXdsConfig{TypeUrl: w.TypeURL, ConfigStatus: debugSyncStatus(w), LastUpdated: timestamppb.New(w.LastSent)}
			if w.LastNACK != "" {
				pc.ErrorState = &adminv3.UpdateFailureState{LastUpdateAttempt: timestamppb.New(w.LastSent), Details: w.LastNACK}
			}
			cc.GenericXdsConfigs = append(cc.GenericXdsConfigs, pc)
		}
		slices.SortFunc(cc.GenericXdsConfigs, func(a, b *statusv3.ClientConfig_GenericXdsConfig) int { return strings.Compare(a.TypeUrl, b.TypeUrl) })
		out.Resources = append(out.Resources, &discovery.Resource{Name: p.ID, Resource: protoconv.MessageToAny(cc)})
	}
	return out, nil
}

// syncMetadata is what istioctl proxy-status shows of a proxy: its
// cluster, namespace and Istio version.
func syncMetadata(p *model.Proxy) *structpb.Struct {
	fields := map[string]*structpb.Value{}
	for k, v := range map[string]string{"CLUSTER_ID": p.Metadata.ClusterID, "NAMESPACE": p.Metadata.Namespace, "ISTIO_VERSION": p.Metadata.IstioVersion} {
		if v != "" {
			fields[k] = structpb.NewStringValue(v)
		}
	}
	return &structpb.Struct{Fields: fields}
}

// debugSyncStatus is Istio's: a rejected response is an error, else not
// sent, acknowledged (synced), or waiting for an acknowledgement (stale).
func debugSyncStatus(w *xds.WatchedResource) statusv3.ConfigStatus {
	switch {
	case w.LastNACK != "":
		return statusv3.ConfigStatus_ERROR
	case w.NonceSent == "":
		return statusv3.ConfigStatus_NOT_SENT
	case w.NonceAcked == w.NonceSent:
		return statusv3.ConfigStatus_SYNCED
	}
	return statusv3.ConfigStatus_STALE
}

func (g *XDSGenerators) configDump(caller *model.Proxy, w *xds.WatchedResource, _ *model.PushRequest) (xds.Generated, error) {
	if caller.VerifiedIdentity == nil {
		return xds.Generated{}, errAuthRequired
	}
	names := w.Names()
	if len(names) != 1 {
		return xds.Generated{}, status.Errorf(codes.InvalidArgument, "%s needs exactly one resource name, the proxy ID <pod>.<namespace> (got %d)", TypeDebugConfigDump, len(names))
	}
	id := names[0]
	if !g.sees(caller, namespaceOf(id)) {
		return xds.Generated{}, status.Errorf(codes.PermissionDenied, "the caller's namespace %s may not read the config of %s", caller.VerifiedIdentity.Namespace, id)
	}
	c, ok := snapshotOf(g.Server, id)
	if !ok || !g.sees(caller, c.Proxy.ConfigNamespace) {
		// like a 404: another replica may hold the connection
		return xds.Generated{}, nil
	}
	dump, err := configDump(g.Server, c, false)
	if errors.Is(err, errNotConnected) {
		// like a 404: another replica may hold the connection
		return xds.Generated{}, nil
	}
	if err != nil {
		return xds.Generated{}, err
	}
	var out xds.Generated
	for _, a := range dump.Configs {
		out.Resources = append(out.Resources, &discovery.Resource{Resource: a})
	}
	return out, nil
}

// namespaceOf is the namespace of a proxy ID <pod>.<namespace>.
func namespaceOf(proxyID string) string {
	for i := len(proxyID) - 1; i >= 0; i-- {
		if proxyID[i] == '.' {
			return proxyID[i+1:]
		}
	}
	return ""
}

// snapshotOf is the connection of a proxy ID, found as Istio finds it:
// the proxy of that ID, else the first connection whose ID contains it.
func snapshotOf(src XDSSource, id string) (xds.ConnectionSnapshot, bool) {
	conns := src.ConnectionSnapshots()
	for _, c := range conns {
		if c.Proxy.ID == id {
			return c, true
		}
	}
	for _, c := range conns {
		if strings.Contains(c.ID, id) {
			return c, true
		}
	}
	return xds.ConnectionSnapshot{}, false
}
