# syntax=docker/dockerfile:1
# jobclock container image. Expects DATABASE_URL (the embedded PostgreSQL is for local use only)
# and JOBCLOCK_TOKENS: it listens on 0.0.0.0, which jobclock refuses to do without authentication.

ARG NODE_IMAGE=node:22-bookworm-slim

FROM ${NODE_IMAGE} AS build
WORKDIR /app
COPY package.json package-lock.json ./
# The embedded PostgreSQL binaries are optional dependencies; the image does not need them.
RUN npm ci --omit=optional --ignore-scripts --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
# Only src is compiled: the image ships dist/src alone, and bench/ (also in tsconfig.build.json's
# include) is not needed here; tsc skips the missing folder.
RUN npx tsc -p tsconfig.build.json

FROM ${NODE_IMAGE} AS deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --omit=optional --ignore-scripts --no-audit --no-fund && npm cache clean --force

FROM ${NODE_IMAGE}
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=3000
WORKDIR /app
COPY --from=deps /app/node_modules ./node_modules
COPY --from=build /app/dist/src ./dist/src
COPY package.json ./
COPY migrations ./migrations
COPY openapi ./openapi
COPY ui ./ui
USER node
EXPOSE 3000
HEALTHCHECK --interval=10s --timeout=3s --start-period=20s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.PORT||3000)+'/healthz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
STOPSIGNAL SIGTERM
CMD ["node", "dist/src/main.js"]
