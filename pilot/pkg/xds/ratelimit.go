package xds

import (
	"context"
	"math"
	"runtime"
	"time"

	"golang.org/x/time/rate"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// DefaultRequestLimit is Istio's automatic limit of new streams per second
// (PILOT_MAX_REQUESTS_PER_SECOND unset): 15 + 5 per core, at most 100.
func DefaultRequestLimit() float64 {
	return math.Min(float64(15+5*runtime.GOMAXPROCS(0)), 100)
}

// SetRequestLimit bounds how many streams start per second (0: no limit),
// so that every proxy reconnecting at once after a restart does not stall
// the others. A stream waits up to a second for its turn, then is refused
// with ResourceExhausted and retries (with backoff) here or at another
// replica, as with Istio's istiod. Call before serving.
func (s *DiscoveryServer) SetRequestLimit(perSecond float64) {
	if perSecond <= 0 {
		s.limit = nil
		return
	}
	s.limit = rate.NewLimiter(rate.Limit(perSecond), 1)
}

// waitForRequestLimit takes a stream's turn.
func (s *DiscoveryServer) waitForRequestLimit(ctx context.Context) error {
	if s.limit == nil {
		return nil
	}
	wait, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	if err := s.limit.Wait(wait); err != nil {
		rateLimited.Inc()
		adsLog.Warnf("new stream over the rate limit (%.0f/s): %v", float64(s.limit.Limit()), err)
		return status.Errorf(codes.ResourceExhausted, "request rate limit exceeded: %v", err)
	}
	return nil
}
