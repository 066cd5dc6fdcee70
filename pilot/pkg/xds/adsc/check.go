package adsc

import (
	"fmt"

	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/protobuf/proto"

	"github.com/meshplane/istiod/pkg/workloadapi"
	"github.com/meshplane/istiod/pkg/workloadapi/security"
)

// resourceName reads a decoded resource's name.
func resourceName(m proto.Message) string {
	switch x := m.(type) {
	case *workloadapi.Address: // named by the workload's UID, or namespace/hostname
		if w := x.GetWorkload(); w != nil {
			return w.GetUid()
		}
		return x.GetService().GetNamespace() + "/" + x.GetService().GetHostname()
	case *security.Authorization:
		return x.GetNamespace() + "/" + x.GetName()
	case interface{ GetClusterName() string }: // ClusterLoadAssignment
		return x.GetClusterName()
	case interface{ GetName() string }:
		return x.GetName()
	}
	return ""
}

func (c *Client) checkNonce(n string) error {
	if n == "" {
		return fmt.Errorf("response without a nonce")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.nonces[n] {
		return fmt.Errorf("nonce %q reused on the stream", n)
	}
	c.nonces[n] = true
	return nil
}

func (c *Client) checkSotW(m *discovery.DiscoveryResponse) (*Response, error) {
	if m.TypeUrl == "" {
		return nil, fmt.Errorf("response without a type URL")
	}
	if m.VersionInfo == "" {
		return nil, fmt.Errorf("%s response without a version", m.TypeUrl)
	}
	if err := c.checkNonce(m.Nonce); err != nil {
		return nil, err
	}
	r := &Response{TypeURL: m.TypeUrl, Version: m.VersionInfo, Nonce: m.Nonce, Resources: map[string]proto.Message{}}
	for i, a := range m.Resources {
		res, err := decode(m.TypeUrl, a)
		if err != nil {
			return nil, fmt.Errorf("%s resource %d: %v", m.TypeUrl, i, err)
		}
		name := resourceName(res)
		if _, dup := r.Resources[name]; dup {
			return nil, fmt.Errorf("%s resource %q sent twice in one response", m.TypeUrl, name)
		}
		r.Resources[name] = res
	}
	c.mu.Lock()
	c.state[m.TypeUrl] = c.sotwState(m.TypeUrl, r.Resources)
	c.mu.Unlock()
	return r, nil
}

// sotwState is what the client holds of a type after a response: for
// listeners, clusters and a wildcard watch the response is the whole state;
// for a named watch of another type (endpoints, routes, secrets) it holds
// what it names, and the watched names it leaves out keep their last copy,
// as Envoy keeps them. Called with c.mu held.
func (c *Client) sotwState(typeURL string, got map[string]proto.Message) map[string]proto.Message {
	names := c.names[typeURL]
	if wholeStateType(typeURL) || len(names) == 0 {
		return got
	}
	prev := c.state[typeURL]
	out := make(map[string]proto.Message, len(names))
	for _, n := range names {
		if m, ok := got[n]; ok {
			out[n] = m
		} else if m, ok := prev[n]; ok {
			out[n] = m
		}
	}
	for n, m := range got { // sent though not asked for
		out[n] = m
	}
	return out
}

// The workload API's wildcard types.
const (
	addressType       = "type.googleapis.com/istio.workload.Address"
	authorizationType = "type.googleapis.com/istio.security.Authorization"
)

// wholeStateType: the types whose state-of-the-world responses always
// carry every resource (the protocol's listeners and clusters, and the
// workload API's wildcard types).
func wholeStateType(typeURL string) bool {
	switch typeURL {
	case listenerType, clusterType, addressType, authorizationType:
		return true
	}
	return false
}

func (c *Client) checkDelta(m *discovery.DeltaDiscoveryResponse) (*Response, error) {
	if m.TypeUrl == "" {
		return nil, fmt.Errorf("delta response without a type URL")
	}
	if m.SystemVersionInfo == "" {
		return nil, fmt.Errorf("%s delta response without a system version", m.TypeUrl)
	}
	if err := c.checkNonce(m.Nonce); err != nil {
		return nil, err
	}
	r := &Response{TypeURL: m.TypeUrl, Version: m.SystemVersionInfo, Nonce: m.Nonce, Resources: map[string]proto.Message{}, Removed: m.RemovedResources}
	for _, res := range m.Resources {
		if res.Name == "" || (res.Version == "" && !c.cfg.Unversioned) {
			return nil, fmt.Errorf("%s delta resource without a name or version", m.TypeUrl)
		}
		msg, err := decode(m.TypeUrl, res.Resource)
		if err != nil {
			return nil, fmt.Errorf("%s resource %q: %v", m.TypeUrl, res.Name, err)
		}
		if n := resourceName(msg); n != res.Name {
			return nil, fmt.Errorf("%s resource named %q carries %q", m.TypeUrl, res.Name, n)
		}
		r.Resources[res.Name] = msg
	}
	for _, n := range m.RemovedResources {
		if _, both := r.Resources[n]; both {
			return nil, fmt.Errorf("%s resource %q both sent and removed", m.TypeUrl, n)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	st := c.state[m.TypeUrl]
	vs := c.version[m.TypeUrl]
	if st == nil {
		st, vs = map[string]proto.Message{}, map[string]string{}
		c.state[m.TypeUrl], c.version[m.TypeUrl] = st, vs
	}
	for _, res := range m.Resources {
		st[res.Name] = r.Resources[res.Name]
		vs[res.Name] = res.Version
	}
	for _, n := range m.RemovedResources {
		delete(st, n)
		delete(vs, n)
	}
	return r, nil
}
