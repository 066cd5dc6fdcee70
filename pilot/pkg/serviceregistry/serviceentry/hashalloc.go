package serviceentry

import (
	"fmt"
	"hash/fnv"
	"strings"

	"github.com/meshplane/istiod/pilot/pkg/model"
)

// With PILOT_ENABLE_IP_AUTOALLOCATE=false Istio has no allocator writing
// ServiceEntry status; its registry gives every service without an
// address an address of its own instead (Istio's older scheme), used by
// proxies that capture DNS and ask for auto-allocation (DNS_AUTO_ALLOCATE).
// The address follows from the service's key, namespace/hostname: its
// FNV-1a hash picks one of 256×254 slots (a taken slot moves on by a
// second hash, double hashing, in the order the services are listed), and
// the slots, numbered in order with every 255th number skipped, become
// 240.240.<n/255>.<n%255> and 2001:2::f0f0:<n/255 in hex><n%255 in hex>.

const (
	hashSlots = 256 * 254
	hashPrime = 65011 // the largest prime below hashSlots
)

// allocatable: a service that declares no address, resolves by IP or DNS
// (not passthrough) and whose host is not a wildcard.
func allocatable(svc *model.Service) bool {
	return svc.DefaultAddress == model.UnspecifiedIP && !strings.HasPrefix(svc.Hostname, "*") && svc.Resolution != model.Passthrough
}

// hashAllocate returns services with the allocatable ones replaced by
// copies that carry their addresses; the others are returned as they are.
func hashAllocate(services []*model.Service) []*model.Service {
	slots := make([]*model.Service, hashSlots)
	out := make([]*model.Service, len(services))
	copy(out, services)
	placed := 0
	for i, svc := range services {
		if !allocatable(svc) {
			continue
		}
		if placed >= hashSlots {
			scope.Errorf("no address left to allocate for ServiceEntry hosts (%d in use)", hashSlots)
			break
		}
		h := fnv.New32a()
		_, _ = h.Write([]byte(svc.Key()))
		sum := h.Sum32()
		slot := sum % hashSlots
		if slots[slot] != nil {
			step := uint32(hashPrime) - sum%hashPrime
			for n := uint32(1); ; n++ {
				// as Istio probes: modulo one slot less than there are
				if slot = (sum + n*step) % (hashSlots - 1); slots[slot] == nil {
					break
				}
			}
		}
		cp := *svc
		slots[slot], out[i] = &cp, &cp
		placed++
	}
	byKey := map[string][2]int{}
	x := 0
	for _, svc := range slots {
		x++
		if svc == nil {
			continue
		}
		if x%255 == 0 {
			x++ // no address ending in .0
		}
		pair, ok := byKey[svc.Key()]
		if !ok {
			pair = [2]int{x / 255, x % 255}
			byKey[svc.Key()] = pair
		}
		svc.AutoAllocatedIPv4Address = fmt.Sprintf("240.240.%d.%d", pair[0], pair[1])
		if pair[0] == 0 {
			svc.AutoAllocatedIPv6Address = fmt.Sprintf("2001:2::f0f0:%x", pair[1])
		} else {
			svc.AutoAllocatedIPv6Address = fmt.Sprintf("2001:2::f0f0:%x%x", pair[0], pair[1])
		}
	}
	return out
}
