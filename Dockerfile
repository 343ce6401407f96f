# s1serve on Debian 12: scripts/setup's release build and the default model in a build stage, then
# a slim runtime stage with only the binary, the shared libraries it links, oneDNN and the model.
# docs/deployment.md; tests/deploy/dockerfile_test.py keeps this file in step with scripts/setup.
#
#   docker build -t s1serve:0.1.0 .
#   docker run --rm -p 8080:8080 -e S1SERVE_API_KEYS=sk-local s1serve:0.1.0

FROM debian:12 AS build
ENV S1SERVE_MODELS=/opt/s1serve/models
WORKDIR /src
# The dependencies in a layer of their own: a source change does not reinstall them.
COPY scripts/install-deps scripts/fetch-onednn scripts/onednn-requirements.txt scripts/
RUN scripts/install-deps
COPY . .
# scripts/setup's own steps (install-deps again finds everything installed): configure, the release
# build and the default model, fetched into $S1SERVE_MODELS.
RUN scripts/setup

FROM debian:12-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends libfmt9 libgomp1 libpcre2-8-0 libssl3 libspdlog1.10 libutf8proc2 \
    libpng16-16 libjpeg62-turbo libwebp7 libwebpdemux2 \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /src/.deps/onednn/lib/libdnnl.so.3.2 /usr/local/lib/
RUN ln -s libdnnl.so.3.2 /usr/local/lib/libdnnl.so.3 && ldconfig
COPY --from=build /src/build/release/s1serve /usr/local/bin/s1serve
COPY --from=build /opt/s1serve/models /opt/s1serve/models
RUN useradd --system --uid 10001 --no-create-home s1serve
USER 10001
ENV S1SERVE_MODELS=/opt/s1serve/models
EXPOSE 8080
# SIGTERM (Kubernetes' stop signal) drains: requests already received are answered (--drain-ms).
ENTRYPOINT ["/usr/local/bin/s1serve"]
CMD ["serve", "--host", "0.0.0.0", "--port", "8080"]
