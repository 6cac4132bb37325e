# Treatment Delivery Service: the supervisor (npm start's topology) or one role per container
# (ROLE=api|workers|scheduler, as compose.yaml runs it), as plain node on the compiled JavaScript.
# glibc base: the embedded ClickHouse (chDB's @chdb/lib-linux-x64-gnu) needs it; with
# CLICKHOUSE_URL set the engine library is never loaded. Node 24, the current LTS (package.json's
# engines: 20.19+, 22, 24; 20 is past its end of life).
#
# Stopping: the supervisor's ordered stop may take up to 28 s (API processes, then the background
# process's batches and ClickHouse, each with its own deadline), longer than `docker stop`'s
# default 10 s before SIGKILL: run it with `docker run --stop-timeout 30` (compose:
# `stop_grace_period: 30s`; Kubernetes: `terminationGracePeriodSeconds: 30`).

# --- build: all dependencies, TypeScript compiled to dist/ ---
FROM node:24-bookworm-slim AS build
WORKDIR /app
# the client is a workspace of the package: npm ci needs its package.json
COPY package.json package-lock.json ./
COPY client/package.json ./client/
RUN npm ci
COPY tsconfig.json tsconfig.build.json ./
COPY api ./api
COPY workers ./workers
COPY shared ./shared
COPY client ./client
RUN npm run build

# --- runtime: production dependencies, dist/ and the files read at run time ---
FROM node:24-bookworm-slim AS runtime
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    OPS_HOST=0.0.0.0 \
    PORT=8080 \
    ALT_PORT=8081 \
    OPS_PORT=9464 \
    DATA_DIR=/data \
    AUTO_START_REDIS=false
WORKDIR /app
COPY package.json package-lock.json ./
COPY client/package.json ./client/
RUN npm ci --omit=dev && npm cache clean --force
COPY --from=build /app/dist ./dist
# read at run time, resolved from the directory of package.json (shared/platform/repo-root.ts)
COPY infra/clickhouse/migrations ./infra/clickhouse/migrations
COPY shared/ingestion/proto/tds ./shared/ingestion/proto/tds
RUN mkdir -p /data && chown node:node /data
USER node
VOLUME ["/data"]
EXPOSE 8080 8081 9464
# healthy when every supervised process answers /readyz on its own ops port (the background
# process on OPS_PORT, API process i on OPS_PORT + i, as ROLE and API_PROCESSES say); compose
# runs one process per container and probes its port itself
HEALTHCHECK --interval=10s --timeout=5s --start-period=60s --retries=3 \
  CMD ["node", "dist/api/healthcheck.js"]
# node as PID 1 (no npm, no shell): SIGTERM from docker stop reaches the supervisor, which stops
# its children in order and exits 0 (given the time: --stop-timeout 30, see the top)
STOPSIGNAL SIGTERM
CMD ["node", "dist/api/supervisor.js"]
