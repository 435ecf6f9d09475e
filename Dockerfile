# syntax=docker/dockerfile:1
# The kcltool image: one static binary on distroless, run as a non-root user.
# It has no shell, so it runs the operator's commands (leases ls, lag,
# doctor, ...) and `run -- PROGRAM ARGS` with a static handler; a handler that
# needs a runtime (sh, python, node) gets kcltool copied into its own image
# instead (deploy/handler-image/Dockerfile, docs/deploy.md).
#
#   make image                      # docker build with VERSION and COMMIT
#   docker buildx build --platform linux/amd64,linux/arm64 \
#     --build-arg VERSION=v1.2.3 --build-arg COMMIT=$(git rev-parse HEAD) -t kcltool:v1.2.3 .
#
# deploy/dockerfile_test.go checks this file and runs its go build line.

# The builder runs on the build machine's platform and cross-compiles to the
# target's: no emulation for an arm64 image. Its Go is go.mod's.
FROM --platform=$BUILDPLATFORM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
ARG TARGETOS=linux
ARG TARGETARCH=amd64
ARG VERSION=dev
ARG COMMIT=unknown
# CGO_ENABLED=0: a static binary (no libc, no dynamic loader), which is what
# lets the final stage have no shell and no libraries, and lets the binary be
# copied into any handler image, glibc or musl.
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH go build -trimpath \
    -ldflags "-s -w -X github.com/kcltool/kcltool/internal/buildinfo.version=${VERSION} -X github.com/kcltool/kcltool/internal/buildinfo.commit=${COMMIT}" \
    -o /out/kcltool .

# distroless/static: CA certificates (the AWS endpoints are HTTPS), tzdata,
# an /etc/passwd with the nonroot user (65532); no shell, no package manager.
FROM gcr.io/distroless/static-debian12:nonroot
ARG VERSION=dev
ARG COMMIT=unknown
LABEL org.opencontainers.image.title="kcltool" \
      org.opencontainers.image.source="https://github.com/kcltool/kcltool" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${COMMIT}"
COPY --from=build /out/kcltool /kcltool
# Numeric, so that Kubernetes' runAsNonRoot can verify it without a passwd lookup.
USER 65532:65532
# --metrics-addr :9090 in the examples: /metrics and the health endpoints.
EXPOSE 9090
ENTRYPOINT ["/kcltool"]
CMD ["--help"]
