# Build: docker build -t istiod .
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -o /out/istiod ./cmd/istiod

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/istiod /usr/local/bin/istiod
# The nonroot base starts in /home/nonroot; the default --meshConfig and
# --networksConfig paths (./etc/istio/config/...) are relative to /.
WORKDIR /
# ports: 8080 http debug, 15010 xDS plaintext, 15012 xDS TLS, 15014 monitoring, 15017 webhooks
EXPOSE 8080 15010 15012 15014 15017
ENTRYPOINT ["/usr/local/bin/istiod"]
CMD ["discovery"]
