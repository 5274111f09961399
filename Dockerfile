# cacheroute image: the router, the simulated engine and the bench driver, one image.
#
#   docker build -t cacheroute .
#   docker run --rm -p 9002:9002 -p 9003:9003 -v $PWD/examples:/cfg cacheroute \
#       dist/src/main.js serve --config /cfg/router.yaml
#   docker run --rm cacheroute dist/bench/sim-engine/main.js --host 0.0.0.0 --port 8000
#
# Stage 1 compiles TypeScript with the locked dev dependencies; stage 2 keeps only the
# production dependencies, the compiled output and the runtime files (protos loaded at
# run time, example configs, the Envoy configs the bench code resolves paths against).

FROM node:20-bookworm AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json ./
COPY proto ./proto
COPY src ./src
COPY bench ./bench
RUN npx tsc -p tsconfig.json \
 && npm prune --omit=dev --no-audit --no-fund

FROM node:20-bookworm-slim AS runtime
ENV NODE_ENV=production
WORKDIR /app
COPY --from=build /app/package.json ./package.json
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY proto ./proto
COPY examples ./examples
COPY envoy ./envoy
USER node
# 9002 ext_proc gRPC, 9003 admin (/healthz /readyz /metrics /debug/*), 8000 sim engine.
EXPOSE 9002 9003 8000
ENTRYPOINT ["node"]
CMD ["dist/src/main.js", "serve", "--config", "examples/router.yaml"]
