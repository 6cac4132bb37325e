# Treatment Delivery Service: the supervisor (npm start's topology) or one role per container
# (ROLE=api|workers|scheduler, as compose.yaml runs it), as plain node on the compiled JavaScript.
# glibc base: the embedded ClickHouse (chDB's @chdb/lib-linux-x64-gnu) needs it; with
# CLICKHOUSE_URL set the engine library is never loaded.

# --- build: all dependencies, TypeScript compiled to dist/ ---
FROM node:20-bookworm-slim AS build
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
FROM node:20-bookworm-slim AS runtime
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
COPY shared/platform/redis/scripts ./shared/platform/redis/scripts
RUN mkdir -p /data && chown node:node /data
USER node
VOLUME ["/data"]
EXPOSE 8080 8081 9464
HEALTHCHECK --interval=10s --timeout=3s --start-period=60s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.OPS_PORT||9464)+'/readyz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
# node as PID 1 (no npm, no shell): SIGTERM from docker stop reaches the supervisor, which stops
# its children in order and exits 0
CMD ["node", "dist/api/supervisor.js"]
