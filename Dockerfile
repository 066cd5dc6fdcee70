# Build: make image, or
#   docker build --build-arg VERSION=$(git describe --tags --always --dirty) -t istiod .
# VERSION is a build argument because the context leaves out .git
# (.dockerignore); the flags are the Makefile's build target's.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X github.com/meshplane/istiod/pkg/version.Version=${VERSION}" -o /out/istiod ./cmd/istiod
# pilot-discovery, as Istio's image names the binary: `kubectl exec ... --
# pilot-discovery request GET /debug/syncz` works as with Istio
RUN ln -s istiod /out/pilot-discovery

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/ /usr/local/bin/
# The nonroot base starts in /home/nonroot; the default --meshConfig and
# --networksConfig paths (./etc/istio/config/...) are relative to /.
WORKDIR /
# Without a cluster the self-signed CA root is kept in $HOME/.local/state/istiod/ca
# (/home/nonroot/...): mount a volume there, or set ISTIOD_CA_DIR, to keep it
# across restarts. With a cluster it is the istio-ca-secret Secret.
# ports: 8080 http debug, 15010 xDS plaintext, 15012 xDS TLS, 15014 monitoring, 15017 webhooks
EXPOSE 8080 15010 15012 15014 15017
ENTRYPOINT ["/usr/local/bin/istiod"]
CMD ["discovery"]
