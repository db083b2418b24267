# One image for every server; the command picks which: proxy (default), control-plane, sim-instance.
#   docker build -t switchyard:0.1.0 .
#   docker run --rm -p 8080:8080 -e REDIS_URL=redis://redis:6379 switchyard:0.1.0 proxy
ARG NODE_IMAGE=node:20-bookworm-slim

# Build: every dependency, then SWC compiles apps and libs to dist/.
FROM ${NODE_IMAGE} AS build
WORKDIR /src
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.base.json ./
COPY tools/build tools/build
COPY apps apps
COPY libs libs
RUN npm run build

# Production dependencies only (no TypeScript, SWC, Jest, Nx).
FROM ${NODE_IMAGE} AS deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund --ignore-scripts && npm cache clean --force

# Runtime: node_modules, dist/ and the entry point; no sources, tests, tools or docs.
FROM ${NODE_IMAGE}
ENV NODE_ENV=production HOST=0.0.0.0
# A 4 MB young-generation semi-space (node's default is 16 MB): a proxy holds ~105 MB RSS after
# 1,000 requests (median of five runs) instead of ~125 MB (docs/benchmarks.md, "Memory of the built proxy").
ENV NODE_OPTIONS=--max-semi-space-size=4
WORKDIR /app
COPY --from=deps --chown=root:root /app/node_modules node_modules
COPY --from=build --chown=root:root /src/dist dist
COPY package.json ./
COPY bin/switchyard-server.js bin/switchyard-server.js
# Files stay root-owned and read-only to the server; it writes nothing (readOnlyRootFilesystem in Kubernetes).
USER node
EXPOSE 8080 8081 9001
# Liveness on $PORT (default 8080); compose and Kubernetes set PORT and their own probes per server.
HEALTHCHECK --interval=10s --timeout=4s --start-period=20s --retries=3 CMD ["node", "bin/switchyard-server.js", "healthcheck"]
# node is PID 1 (exec form, no npm, no shell): SIGTERM reaches the server, which drains and exits 0.
ENTRYPOINT ["node", "bin/switchyard-server.js"]
CMD ["proxy"]
