# StoatFlow agent image: one static binary on a distroless base, running as a non-root user
# on a read-only root file system; only the state directory is writable (a volume).
#
#   make docker        (docker build --build-arg VERSION=... -t stoatflow .)
#   head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' > http-token
#   docker run --rm --read-only -p 127.0.0.1:9464:9464 \
#     -v "$PWD/http-token:/run/secrets/stoatflow-http-token:ro" stoatflow
#   curl -H "Authorization: Bearer $(cat http-token)" localhost:9464/v1/stores
#
# The image's default config is the repository's agent.toml (the embedded broker and the
# example pipeline: for trying only) with state.dir = /var/lib/stoatflow, the HTTP listener
# on every interface, and so the bearer token read from the secret file
# /run/secrets/stoatflow-http-token (agent.http.token.file; a Docker or Compose secret lands
# there): the agent refuses to listen beyond loopback without a token (docs/http.md).
# /healthz and /readyz answer without it. Real deployments mount their own /etc/stoatflow;
# see deploy/ and docs/operations.md.

# go.mod asks for go 1.26.8: the 1.26 image carries the newest 1.26 patch release.
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
# CGO_ENABLED=0: no libc, so the binary runs on a base image without one.
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" \
      -o /out/usr/local/bin/stoatflow ./cmd/stoatflow
# validate reads the token file as run does: a throwaway one, in the build stage only.
RUN mkdir -p /out/etc/stoatflow /out/var/lib/stoatflow \
 && cp -r scripts /out/etc/stoatflow/scripts \
 && sed -e 's|^state\.dir *=.*|state.dir = "/var/lib/stoatflow"|' \
        -e 's|^http\.listen *=.*|http.listen = "0.0.0.0:9464"\nhttp.token.file = "/run/secrets/stoatflow-http-token"|' \
        agent.toml > /out/etc/stoatflow/agent.toml \
 && grep -q '^state.dir = "/var/lib/stoatflow"$' /out/etc/stoatflow/agent.toml \
 && grep -q '^http.listen = "0.0.0.0:9464"$' /out/etc/stoatflow/agent.toml \
 && grep -q '^http.token.file = "/run/secrets/stoatflow-http-token"$' /out/etc/stoatflow/agent.toml \
 && mkdir -p /run/secrets && echo build-only > /run/secrets/stoatflow-http-token \
 && /out/usr/local/bin/stoatflow validate -c /out/etc/stoatflow/agent.toml \
 && rm /run/secrets/stoatflow-http-token

# static-debian12 holds CA certificates (TLS to brokers with the system roots), tzdata and
# /etc/passwd with the nonroot user (65532), and no shell.
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/usr/local/bin/stoatflow /usr/local/bin/stoatflow
COPY --from=build /out/etc/stoatflow /etc/stoatflow
# Owned by the runtime user, so a fresh volume mounted here starts writable for it.
COPY --from=build --chown=65532:65532 /out/var/lib/stoatflow /var/lib/stoatflow
USER 65532:65532
VOLUME ["/var/lib/stoatflow"]
# agent.http.listen: /healthz, /readyz, /metrics, /topology and the store queries (all but
# the probes need the token).
EXPOSE 9464
ENTRYPOINT ["/usr/local/bin/stoatflow"]
CMD ["run", "-c", "/etc/stoatflow/agent.toml"]
