package xds

import (
	"testing"

	"github.com/meshplane/istiod/pilot/pkg/model"
)

// named is a generator that only has a name, to tell which one was found.
type named string

func (named) Generate(*model.Proxy, *WatchedResource, *model.PushRequest) (Generated, error) {
	return Generated{}, nil
}

// A proxy type's generators win over the defaults for proxies of that
// type only, and a GENERATOR of the proxy's metadata wins over both; a
// type without its own generator falls back to the default.
func TestGeneratorsByNodeType(t *testing.T) {
	var g generators
	g.register("", ListenerType, named("default"))
	g.register("", ClusterType, named("default"))
	g.register(nodeTypeKey(model.Waypoint), ListenerType, named("waypoint"))
	g.register("grpc", ListenerType, named("grpc"))

	for _, c := range []struct {
		proxy *model.Proxy
		typ   string
		want  named
	}{
		{&model.Proxy{Type: model.SidecarProxy}, ListenerType, "default"},
		{&model.Proxy{Type: model.Router}, ListenerType, "default"},
		{&model.Proxy{Type: model.Waypoint}, ListenerType, "waypoint"},
		{&model.Proxy{Type: model.Waypoint}, ClusterType, "default"},
		{&model.Proxy{Type: model.Waypoint, Metadata: &model.NodeMetadata{Generator: "grpc"}}, ListenerType, "grpc"},
		{&model.Proxy{Type: model.Waypoint, Metadata: &model.NodeMetadata{Generator: "other"}}, ListenerType, "waypoint"},
	} {
		got, _ := g.find(c.proxy, c.typ).(named)
		if got != c.want {
			t.Errorf("%s proxy (generator %q), %s: found %q, want %q", c.proxy.Type, c.proxy.GeneratorName(), ShortType(c.typ), got, c.want)
		}
	}
}

// RegisterGeneratorForNodeType is what the server finds for that type.
func TestRegisterGeneratorForNodeType(t *testing.T) {
	s := NewDiscoveryServer()
	s.RegisterGenerator(RouteType, named("default"))
	s.RegisterGeneratorForNodeType(model.Waypoint, RouteType, named("waypoint"))
	if got := s.gens.find(&model.Proxy{Type: model.Waypoint}, RouteType); got != named("waypoint") {
		t.Errorf("waypoint routes from %v", got)
	}
	if got := s.gens.find(&model.Proxy{Type: model.SidecarProxy}, RouteType); got != named("default") {
		t.Errorf("sidecar routes from %v", got)
	}
}
