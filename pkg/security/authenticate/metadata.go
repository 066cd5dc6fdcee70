package authenticate

import (
	"context"
	"errors"
	"strings"

	"google.golang.org/grpc/metadata"
)

const (
	// AuthorizationHeader carries "Bearer <token>".
	AuthorizationHeader = "authorization"
	// BearerTokenPrefix starts the authorization value.
	BearerTokenPrefix = "Bearer "
	// ClusterIDHeader is the metadata key of the agent's ClusterID header
	// (gRPC lower-cases keys).
	ClusterIDHeader = "clusterid"
)

// ExtractBearerToken returns the token of the first "authorization:
// Bearer <token>" metadata value, with Istio's messages when there is none.
func ExtractBearerToken(ctx context.Context) (string, error) {
	md, ok := metadata.FromIncomingContext(ctx)
	if !ok {
		return "", errors.New("no metadata is attached")
	}
	values, ok := md[AuthorizationHeader]
	if !ok {
		return "", errors.New("no HTTP authorization header exists")
	}
	for _, v := range values {
		if tok, ok := strings.CutPrefix(v, BearerTokenPrefix); ok {
			return tok, nil
		}
	}
	return "", errors.New("no bearer token exists in HTTP authorization header")
}

// clusterIDs returns the ClusterID metadata values (none when absent).
func clusterIDs(ctx context.Context) []string {
	md, _ := metadata.FromIncomingContext(ctx)
	return md.Get(ClusterIDHeader)
}
