# syntax=docker/dockerfile:1

# Build stage: the official Swift 6 image on Debian bookworm, plus the C libraries' headers. The
# binary embeds the Swagger UI build that /docs serves (Sources/CSwaggerUI), so nothing else is
# copied into the runtime stage.
FROM swift:6.0-bookworm AS build
RUN apt-get update \
    && apt-get install -y --no-install-recommends libsqlite3-dev libmicrohttpd-dev libpq-dev libcurl4-openssl-dev pkg-config \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
# SwiftPM reads every target's folder when it loads the manifest: the test targets' and the
# build-tool plugin's are copied too, though only the strata product is built.
COPY Package.swift ./
COPY Sources ./Sources
COPY Plugins ./Plugins
COPY Tests ./Tests
RUN swift build -c release --static-swift-stdlib --product strata \
    && install -D -m 0755 .build/release/strata /out/strata

# Runtime stage: only the shared libraries the binary links (see scripts/check-container):
# SQLite, libmicrohttpd (with GnuTLS, which it depends on, for --tls-cert), libpq (PostgreSQL
# stores), libxml2 (Foundation's XML parser reads Core Data .xcdatamodel files), and libcurl
# (Foundation's URLSession, through which `strata replicate` talks to the server it follows).
FROM debian:bookworm-slim
RUN apt-get update \
    && apt-get install -y --no-install-recommends libsqlite3-0 libmicrohttpd12 libpq5 libxml2 libcurl4 \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --uid 10001 --user-group --home-dir /data --shell /usr/sbin/nologin strata \
    && mkdir -p /data \
    && chown strata:strata /data
COPY --from=build /out/strata /usr/local/bin/strata
USER 10001:10001
WORKDIR /data
VOLUME ["/data"]
ENV STRATA_HOST=0.0.0.0 \
    STRATA_PORT=8080 \
    STRATA_DATA_DIR=/data
EXPOSE 8080
HEALTHCHECK --interval=10s --timeout=3s --start-period=10s --retries=3 CMD ["/usr/local/bin/strata", "health"]
STOPSIGNAL SIGTERM
ENTRYPOINT ["/usr/local/bin/strata"]
CMD ["serve"]
