# syntax=docker/dockerfile:1
# floe's image: one image for every role. The broker is the entrypoint; the
# coordinator runs with --entrypoint /usr/local/bin/coordinator (compose) or
# command: [/usr/local/bin/coordinator] (the Helm chart); floe is the admin
# CLI. Static binaries on distroless, as a non-root user; every flag can
# also be set as FLOE_<FLAG>. deploy/dockerfile_test.go checks this file.
ARG GO_VERSION=1.26

FROM --platform=$BUILDPLATFORM golang:${GO_VERSION} AS build
ARG TARGETOS
ARG TARGETARCH
WORKDIR /src
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH \
    go build -trimpath -ldflags="-s -w" -o /out/bin/ \
        ./cmd/broker ./cmd/coordinator ./cmd/floe ./cmd/floe-healthcheck \
    && mkdir -p /out/data

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/bin/ /usr/local/bin/
# --data-dir of both roles: the broker's embedded coordinator (and, without
# S3, its objects), or the coordinator's Pebble state. Owned by the image's
# user so that it is writable without root.
COPY --from=build --chown=65532:65532 /out/data /var/lib/floe
ENV FLOE_DATA_DIR=/var/lib/floe
WORKDIR /var/lib/floe
USER 65532:65532
# Kafka, the broker's HTTP (/kv, /metrics, /healthz, /readyz), the
# coordinator's HTTP (/metrics, /healthz, /readyz).
EXPOSE 9092 8080 8090
# GET /healthz on $FLOE_HTTP_ADDR's port, else on 8080 or 8090.
HEALTHCHECK --interval=10s --timeout=5s --start-period=30s --retries=3 \
    CMD ["/usr/local/bin/floe-healthcheck"]
ENTRYPOINT ["/usr/local/bin/broker"]
