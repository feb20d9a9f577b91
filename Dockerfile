# ctxgate's API server (`ctxgate serve`) in a small image: built in a Rust image with a C
# compiler (tree-sitter grammars and SQLite are C), run from a slim Debian as a non-root user.
#   docker build -t ctxgate .
#   docker run -p 8787:8787 -v ctxgate-data:/data ctxgate
# Checked by scripts/container-lint.sh (hadolint) in the test command.

FROM rust:1.95-bookworm AS build
WORKDIR /src
COPY . .
RUN cargo build --release --locked --bin ctxgate \
    && install -D -m 0755 target/release/ctxgate /out/ctxgate

FROM debian:bookworm-slim
# ca-certificates: https sources (git and tarball URLs) and embedding/summary providers.
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends ca-certificates \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --uid 10001 --home-dir /data --create-home ctxgate
COPY --from=build /out/ctxgate /usr/local/bin/ctxgate
USER 10001
ENV CTXGATE_HOME=/data
VOLUME ["/data"]
EXPOSE 8787
ENTRYPOINT ["ctxgate"]
CMD ["serve", "--addr", "0.0.0.0:8787"]
