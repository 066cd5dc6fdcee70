package generators

import (
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/protobuf/proto"

	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"

	"github.com/meshplane/istiod/pilot/pkg/xds"
	"github.com/meshplane/istiod/pkg/log"
	"github.com/meshplane/istiod/pkg/monitoring"
)

var genLog = log.RegisterScope("ads", "xDS server")

// metricInvalidResources counts generated resources that failed their own
// validation and were held instead of sent (ours; Istio sends them and the
// proxy rejects the whole response).
var metricInvalidResources = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "pilot_xds_invalid_resources",
	Help: "Generated xDS resources not sent because they failed validation, by type.",
}, []string{"type"})

func init() { monitoring.MustRegister(metricInvalidResources) }

// validated is what the generators' messages offer: the validation
// go-control-plane generates for every Envoy type.
type validated interface {
	proto.Message
	ValidateAll() error
}

// toResources wraps generated messages, their encodings kept in enc. A message that fails its own
// validation is logged, counted and held (see xds.Generated): the proxy
// keeps its last valid copy, and /debug/warningz lists it for as long as a
// connected proxy does.
func toResources[T validated](enc *xds.Encodings, typeURL string, msgs []T, name func(T) string) xds.Generated {
	out := xds.Generated{Resources: make([]*discovery.Resource, 0, len(msgs))}
	for _, m := range msgs {
		if err := m.ValidateAll(); err != nil {
			hold(&out, typeURL, name(m), err)
			continue
		}
		if regexTypes[typeURL] {
			if err := checkBeyondValidation(m); err != nil {
				hold(&out, typeURL, name(m), err)
				continue
			}
		}
		b, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
		if err != nil {
			hold(&out, typeURL, name(m), err)
			continue
		}
		// the version and the resource's encoding are made once here,
		// where cached resources are built, rather than per connection
		// that sends them
		out.Resources = append(out.Resources, enc.NewResource(typeURL, name(m), b))
	}
	return out
}

// regexTypes are the types whose resources carry regexes from user config
// (route matches, authorization rules); clusters and endpoints carry none.
var regexTypes = map[string]bool{xds.RouteType: true, xds.ListenerType: true}

func hold(out *xds.Generated, typeURL, name string, err error) {
	short := xds.ShortType(typeURL)
	genLog.Errorf("not sending invalid %s %s (proxies keep their last valid copy): %v", short, name, err)
	metricInvalidResources.WithLabelValues(short).Inc()
	out.Held = append(out.Held, xds.Held{Name: name, Reason: err.Error()})
}
