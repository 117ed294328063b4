# syncloop in a container: the same build the README describes (go build .),
# run as a non-root user on a minimal image. The binary is the whole site;
# the Kubernetes source is fetched at run time through the Go module proxy and
# cached under /cache (a volume); pair-reading rooms are kept in /data (a
# volume too), so mount both to keep Readings and rooms across restarts.
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -o /out/syncloop . && mkdir -p /out/cache /out/data

# The relay, for a Kubernetes DaemonSet (deploy/helm/syncloop): the same
# binary on Debian, whose sh and chroot run the node's own journalctl
# (syncloop relay --cmd "chroot /host journalctl -u kubelet -f -o json --all").
# Build it with: docker build --target relay -t syncloop-relay .
FROM debian:bookworm-slim AS relay
COPY --from=build /out/syncloop /usr/local/bin/syncloop
ENTRYPOINT ["/usr/local/bin/syncloop"]
CMD ["relay"]

# The site (the default target).
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/syncloop /syncloop
# the volume must belong to the user the server runs as
COPY --from=build --chown=65532:65532 /out/cache /cache
COPY --from=build --chown=65532:65532 /out/data /data
ENV XDG_CACHE_HOME=/cache \
    SYNCLOOP_DATA_DIR=/data \
    SYNCLOOP_ADDR=:8080
VOLUME ["/cache", "/data"]
EXPOSE 8080
USER nonroot:nonroot
# /healthz answers 503 until the default tag is read, which on a first start
# means fetching it from the module proxy: hence the long start period.
HEALTHCHECK --interval=30s --timeout=5s --start-period=5m CMD ["/syncloop", "health", "--url", "http://127.0.0.1:8080/healthz"]
ENTRYPOINT ["/syncloop"]
CMD ["serve"]
