package aggregate

import (
	"slices"

	"github.com/meshplane/istiod/pilot/pkg/model"
)

var _ model.NetworkGatewaySource = (*Controller)(nil)

// NetworkGateways lists the gateways every registry found (those that
// find gateways: the Kubernetes ones), sorted, without duplicates, as
// Istio merges its registries' gateways into one set. Owned by the caller.
func (c *Controller) NetworkGateways() []model.NetworkGateway {
	var out []model.NetworkGateway
	for _, r := range c.regs() {
		if src, ok := r.(model.NetworkGatewaySource); ok {
			out = append(out, src.NetworkGateways()...)
		}
	}
	return slices.Compact(model.SortGateways(out))
}
