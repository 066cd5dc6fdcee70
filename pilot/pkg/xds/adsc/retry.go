package adsc

import (
	"context"
	"math/rand/v2"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Backoff is a retry schedule, as a proxy's reconnect loop: the first wait
// is Initial, each later one twice the previous up to Max, and every wait is
// drawn at random from its upper half, so that clients refused together do
// not come back together.
type Backoff struct {
	Initial, Max time.Duration
}

func (b Backoff) wait(attempt int) time.Duration {
	d := b.Initial
	for i := 0; i < attempt && d < b.Max; i++ {
		d *= 2
	}
	d = min(d, b.Max)
	return d/2 + rand.N(d/2+1)
}

// Retryable reports whether a stream error means "try again later": the
// server refused the stream over its rate limit (ResourceExhausted) or was
// not there (Unavailable: not listening yet, or shutting down).
func Retryable(err error) bool {
	switch status.Code(err) {
	case codes.ResourceExhausted, codes.Unavailable:
		return true
	}
	return false
}

// Attempt is the outcome of DialUntilAccepted.
type Attempt struct {
	Client *Client
	// First is the first response of the accepted stream.
	First *Response
	// Refused counts the streams refused with ResourceExhausted before,
	// Unavailable the ones that found no server.
	Refused, Unavailable int
}

// DialUntilAccepted opens a stream to addr, lets subscribe send its first
// requests and waits up to wait for the first response. While the server
// turns the stream away (Retryable), it closes the stream, backs off and
// tries again, until ctx ends. Any other error ends it at once.
func DialUntilAccepted(ctx context.Context, addr string, cfg Config, b Backoff, wait time.Duration, subscribe func(*Client) error) (Attempt, error) {
	var a Attempt
	for attempt := 0; ; attempt++ {
		c, err := Dial(ctx, addr, cfg)
		if err == nil {
			// a Send on a stream the server ended fails with io.EOF; the
			// reason is what the next receive returns
			_ = subscribe(c)
			a.First, err = c.Next(wait)
			if err == nil {
				a.Client = c
				return a, nil
			}
			c.Close()
		}
		if !Retryable(err) {
			return a, err
		}
		if status.Code(err) == codes.ResourceExhausted {
			a.Refused++
		} else {
			a.Unavailable++
		}
		select {
		case <-ctx.Done():
			return a, ctx.Err()
		case <-time.After(b.wait(attempt)):
		}
	}
}
