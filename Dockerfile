# syntax=docker/dockerfile:1
#
# Gatehouse container image: a static binary on distroless, running as the
# unprivileged user nonroot (65532).
#
#   docker build -t gatehouse .
#   docker run --rm -p 8080:8080 -p 127.0.0.1:9090:9090 -v gatehouse-data:/var/lib/gatehouse \
#     gatehouse --upstream=http://app:3000 --admin-listen=:9090
#
# The working directory /var/lib/gatehouse holds the bbolt file (--db
# gatehouse.db) and, without SMTP, the mail folder (--mail-dir mail); mount a
# volume there. The admin listener defaults to 127.0.0.1:9090, which is not
# reachable from outside the container: pass --admin-listen=:9090 to publish it.

FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
# `gatehouse version` prints this: docker build --build-arg VERSION=$(git describe --tags) .
ARG VERSION=dev
RUN --mount=type=cache,target=/go/pkg/mod \
    --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 go build -trimpath -ldflags="-s -w -X main.version=${VERSION}" \
        -o /out/gatehouse ./cmd/gatehouse \
 && mkdir -p /out/data

FROM gcr.io/distroless/static-debian12:nonroot
# The OCI labels of `make image` (cmd/ociimage):
#   docker build --build-arg VERSION=v2.0.0 --build-arg REVISION=$(git rev-parse HEAD) .
ARG VERSION=dev
ARG REVISION=
LABEL org.opencontainers.image.title="gatehouse" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.source="https://github.com/gatehouse-auth/gatehouse"
COPY --from=build /out/gatehouse /usr/local/bin/gatehouse
COPY --from=build --chown=65532:65532 /out/data /var/lib/gatehouse
WORKDIR /var/lib/gatehouse
USER 65532:65532
EXPOSE 8080 9090
ENTRYPOINT ["/usr/local/bin/gatehouse"]
