package debug

import (
	"bytes"
	"context"
	"net/http"
	"net/url"

	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pilot/pkg/xds"
)

// TypeDebug is the debug type `istioctl x internal-debug` asks for over
// ADS: the one resource name is a debug endpoint with its query
// ("syncz", "config_dump?proxyID=a.b"), and the answer is that endpoint's
// body, as an Any of this type URL.
const TypeDebug = "istio.io/debug"

// RegisterXDS serves the debug endpoints over ADS as TypeDebug, with the
// rules of the other debug types (see XDSGenerators): callers that proved
// an identity over TLS only; a caller of systemNamespace may ask for any
// endpoint, any other caller only for config_dump, edsz and ndsz of the
// proxies of its own namespace. Call it after the Add* methods.
func (d *Debug) RegisterXDS(s interface {
	RegisterGenerator(typeURL string, g xds.Generator)
}, systemNamespace string) {
	s.RegisterGenerator(TypeDebug, xds.GeneratorFunc(func(caller *model.Proxy, w *xds.WatchedResource, _ *model.PushRequest) (xds.Generated, error) {
		return d.generateDebug(caller, w, systemNamespace)
	}))
}

func (d *Debug) generateDebug(caller *model.Proxy, w *xds.WatchedResource, systemNamespace string) (xds.Generated, error) {
	if caller.VerifiedIdentity == nil {
		return xds.Generated{}, errAuthRequired
	}
	names := w.Names()
	if len(names) != 1 {
		return xds.Generated{}, status.Error(codes.InvalidArgument, "exactly one debug request is required")
	}
	name := names[0]
	u, err := url.Parse(name)
	if err != nil {
		return xds.Generated{}, status.Errorf(codes.InvalidArgument, "debug request %q: %v", name, err)
	}
	ns := caller.VerifiedIdentity.Namespace
	if ns == systemNamespace {
		ns = ""
	} else if !namespaceScoped[u.Path] {
		return xds.Generated{}, status.Errorf(codes.PermissionDenied, "the debug endpoint %s is not available to the namespace %s", u.Path, ns)
	}
	body := d.serveInternal(u, ns)
	return xds.Generated{Resources: []*discovery.Resource{{Name: name, Resource: &anypb.Any{TypeUrl: TypeDebug, Value: body}}}}, nil
}

// serveInternal runs a debug endpoint without the HTTP guard and returns
// its body; restricted is the namespace whose proxies alone the caller
// may see ("" all).
func (d *Debug) serveInternal(u *url.URL, restricted string) []byte {
	ctx := context.Background()
	if restricted != "" {
		ctx = context.WithValue(ctx, callerNamespaceKey{}, restricted)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, (&url.URL{Path: "/debug/" + u.Path, RawQuery: u.RawQuery}).String(), nil)
	if err != nil {
		return []byte(err.Error())
	}
	rec := &responseBuffer{header: http.Header{}}
	if e, ok := d.handlers[u.Path]; ok {
		e.h(rec, req)
	} else {
		http.NotFound(rec, req)
	}
	return rec.body.Bytes()
}

// responseBuffer keeps what a handler writes (its status is not kept: the
// xDS answer is the body alone, as Istio's).
type responseBuffer struct {
	header http.Header
	body   bytes.Buffer
}

func (b *responseBuffer) Header() http.Header         { return b.header }
func (b *responseBuffer) Write(p []byte) (int, error) { return b.body.Write(p) }
func (b *responseBuffer) WriteHeader(int)             {}
