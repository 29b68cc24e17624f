# acl-operator container image: `make image` (docker build -t acl-operator:dev .).
#
# Two stages: the first installs every dependency from package-lock.json, compiles src/ to dist/
# (tsconfig.build.json: src only, *.test.ts excluded) and prunes the dev dependencies; the runtime
# stage gets dist/ and the production node_modules only, and runs as an unprivileged user.
#
# The runtime base stays node:24-bookworm-slim rather than gcr.io/distroless/nodejs24-debian12: the
# same Node build as the build stage (so no native-module surprises), and a shell with `sleep` for
# the Deployment's preStop hook and for `kubectl exec` while debugging. Its npm and corepack are
# removed: the operator never runs them, and they are most of the base image's CVE reports.
FROM node:24-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
RUN npx tsc -p tsconfig.build.json
# tsconfig.build.json excludes src/**/*.test.ts; fail the build if a test ever slips into dist/.
RUN if [ -n "$(find dist -name '*.test.*')" ]; then echo 'dist/ contains test files' >&2; exit 1; fi
RUN npm prune --omit=dev --no-audit --no-fund
# Type declarations and source maps are never read at run time: about 45 MB of the production modules
# (client-node alone ships 28 MB of .d.ts and 11 MB of .map).
RUN find node_modules -type f \( -name '*.d.ts' -o -name '*.d.mts' -o -name '*.d.cts' -o -name '*.map' \) -delete

FROM node:24-bookworm-slim
RUN rm -rf /usr/local/lib/node_modules/npm /usr/local/lib/node_modules/corepack \
      /usr/local/bin/npm /usr/local/bin/npx /usr/local/bin/corepack
ENV NODE_ENV=production
WORKDIR /app
COPY --from=build /app/package.json ./package.json
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
# uid/gid 1000 is the image's "node" user; the Deployment sets runAsUser 1000 and runAsNonRoot too.
USER 1000:1000
# 8443: HTTPS API (decisions, bundles); 9090: plain HTTP ops (/metrics, /healthz, /readyz).
EXPOSE 8443 9090
ENTRYPOINT ["node", "/app/dist/cli.js"]
# Kubernetes mode by default; the Deployment passes its own `serve ...` arguments.
CMD ["serve"]
