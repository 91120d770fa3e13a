# syntax=docker/dockerfile:1
# tstriton server image: serves a Triton model repository (ONNX models, ensembles, JavaScript modules) over
# KServe v2 on HTTP 8000, gRPC 8001 and metrics 8002. docs/deploy.md#container-image tells how to build and run it.
#
#   podman build --format docker -t tstriton .              (docker build -t tstriton .)
#   podman run -p 8000-8002:8000-8002 -v "$PWD/models:/models:ro" tstriton
#
# Targets: the last stage (runtime, CPU) by default; `--target gpu` for GPU instances through onnxruntime-node's
# bundled WebGPU provider (the runtime plus the Vulkan and GL loaders, for the NVIDIA driver's Vulkan ICD);
# `--target cuda` for onnxruntime-node's CUDA 12 provider.
# Build arguments:
#   BUILD_IMAGE      image of the build stage: Node.js 24 with npm at /usr/local/bin      (node:24-bookworm-slim)
#   BASE_IMAGE       image the CPU runtime starts from: Node.js 24 at /usr/local/bin/node (node:24-bookworm-slim)
#   CUDA_BASE_IMAGE  image the cuda target starts from: CUDA 12 and cuDNN 9 runtime libraries
#   GPU_PACKAGES     the Vulkan and GL loaders the gpu target installs with apt-get (Debian bookworm's versions)
#   EXTRA_PACKAGES   more npm packages for the runtime node_modules: what a --module file or model.ts requires
# Behind a proxy that re-signs TLS, hand npm its CA bundle as a build secret (never stored in a layer):
#   podman build --secret id=npm_ca,src=/etc/ssl/certs/ca-certificates.crt ...

ARG BUILD_IMAGE=node:24-bookworm-slim
ARG BASE_IMAGE=node:24-bookworm-slim
ARG CUDA_BASE_IMAGE=docker.io/nvidia/cuda:12.8.1-cudnn-runtime-ubuntu24.04

# --- build: compile the TypeScript, then cut node_modules down to what runs ---------------------------------
FROM ${BUILD_IMAGE} AS build
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
WORKDIR /src
# onnxruntime-node's install script would download CUDA libraries from NuGet; the CPU image needs none of them.
# `npm ci` also installs the `node` dev dependency (Node 24 from the npm registry, for machines whose node is older):
# `npm run build` runs on it, and the production node_modules below leaves it out; the image runs BASE_IMAGE's node.
ENV ONNXRUNTIME_NODE_INSTALL=skip \
    npm_config_update_notifier=false \
    npm_config_fund=false \
    npm_config_audit=false
COPY package.json package-lock.json ./
RUN --mount=type=secret,id=npm_ca --mount=type=cache,id=tstriton-npm,target=/root/.npm,sharing=locked \
    if [ -s /run/secrets/npm_ca ]; then export NODE_EXTRA_CA_CERTS=/run/secrets/npm_ca; fi \
    && npm ci
COPY tsconfig.json tsconfig.build.json ./
COPY scripts/copy-assets.js scripts/
COPY lib lib
COPY decorators decorators
COPY examples examples
COPY bench bench
RUN npm run build

# Production node_modules: the dependencies, plus onnxruntime-node at the lockfile's version (an optional peer
# of the package, which the image always needs to serve ONNX models) and EXTRA_PACKAGES. The development
# dependencies go from this package.json (the image takes the original one) so that none of these counts as one.
# onnxruntime-node's binaries for other systems and architectures go too (about 240 MB).
ARG EXTRA_PACKAGES=""
# EXTRA_PACKAGES is a list of package specs, split into words on purpose (SC2086); their versions are whatever
# the builder writes in them (DL3016): onnxruntime-node is pinned to the lockfile's.
# hadolint ignore=SC2086,DL3016
RUN --mount=type=secret,id=npm_ca --mount=type=cache,id=tstriton-npm,target=/root/.npm,sharing=locked \
    if [ -s /run/secrets/npm_ca ]; then export NODE_EXTRA_CA_CERTS=/run/secrets/npm_ca; fi \
    && ort=$(node -p "require('./package-lock.json').packages['node_modules/onnxruntime-node'].version") \
    && npm pkg delete devDependencies \
    && npm install --omit=dev --save-prod --prefer-offline "onnxruntime-node@${ort}" ${EXTRA_PACKAGES} \
    && ortbin=node_modules/onnxruntime-node/bin/napi-v6 \
    && find "$ortbin" -mindepth 1 -maxdepth 1 ! -name linux -exec rm -rf {} + \
    && find "$ortbin/linux" -mindepth 1 -maxdepth 1 ! -name "$(node -p process.arch)" -exec rm -rf {} + \
    && node -e "require('onnxruntime-node')" \
    && mkdir -p /app \
    && cp -a node_modules /app/ \
    && mkdir -p /app/dist \
    && cp -a dist/lib dist/decorators /app/dist/ \
    && chmod 0755 /app/dist/lib/cli/main.js

# --- cuda-libs: the production node_modules with onnxruntime-node's CUDA 12 provider libraries ---------------
# The install script reads ONNXRUNTIME_NODE_INSTALL (the build stage sets it to skip) and downloads
# libonnxruntime_providers_{cuda,shared,tensorrt}.so from NuGet into bin/napi-v6/linux/x64 (x86_64 only).
FROM build AS cuda-libs
RUN --mount=type=secret,id=npm_ca \
    if [ -s /run/secrets/npm_ca ]; then export NODE_EXTRA_CA_CERTS=/run/secrets/npm_ca; fi \
    && ONNXRUNTIME_NODE_INSTALL=cuda12 node /app/node_modules/onnxruntime-node/script/install.js \
    && test -f /app/node_modules/onnxruntime-node/bin/napi-v6/linux/x64/libonnxruntime_providers_cuda.so

# --- cuda: the server with onnxruntime-node's CUDA execution provider (instance_group KIND_GPU) --------------
# Needs the NVIDIA container toolkit on the host: podman run --device nvidia.com/gpu=all, docker run --gpus all.
FROM ${CUDA_BASE_IMAGE} AS cuda
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
RUN apt-get update \
    && apt-get install -y --no-install-recommends "tini=0.19.*" \
    && rm -rf /var/lib/apt/lists/* \
    && groupadd --gid 10001 tstriton \
    && useradd --no-log-init --uid 10001 --gid 10001 --home-dir /app --no-create-home --shell /usr/sbin/nologin tstriton \
    && mkdir -p /models \
    && ln -s /app/dist/lib/cli/main.js /usr/local/bin/tstriton
COPY --from=build /usr/local/bin/node /usr/local/bin/node
WORKDIR /app
COPY package.json ./
COPY --from=cuda-libs /app/ ./
# ORT_DISABLE_TELEMETRY: onnxruntime would otherwise try to keep a device id in the home folder, which is read-only.
# MALLOC_ARENA_MAX: glibc's arena cap tstriton serve would otherwise restart itself under (docs/threads.md#malloc-arenas).
ENV NODE_ENV=production \
    ORT_DISABLE_TELEMETRY=1 \
    MALLOC_ARENA_MAX=2
USER 10001:10001
EXPOSE 8000 8001 8002
HEALTHCHECK --interval=10s --timeout=5s --start-period=60s --retries=3 \
    CMD ["node", "-e", "fetch(`http://127.0.0.1:${process.env.TSTRITON_HTTP_PORT || 8000}/v2/health/ready`).then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
ENTRYPOINT ["/usr/bin/tini", "--", "tstriton"]
CMD ["serve", "--model-repository", "/models"]

# --- server: the CPU server, which the runtime (default) and gpu targets are ---------------------------------
FROM ${BASE_IMAGE} AS server
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
# tini runs as PID 1: it hands SIGTERM to node and reaps orphans. A base made by scripts/make-base-image.sh has it.
RUN if [ ! -x /usr/bin/tini ]; then \
        apt-get update \
        && apt-get install -y --no-install-recommends "tini=0.19.*" \
        && rm -rf /var/lib/apt/lists/*; \
    fi \
    && groupadd --gid 10001 tstriton \
    && useradd --no-log-init --uid 10001 --gid 10001 --home-dir /app --no-create-home --shell /usr/sbin/nologin tstriton \
    && mkdir -p /models \
    && ln -s /app/dist/lib/cli/main.js /usr/local/bin/tstriton
WORKDIR /app
COPY package.json ./
COPY --from=build /app/ ./
# ORT_DISABLE_TELEMETRY: onnxruntime would otherwise try to keep a device id in the home folder, which is read-only.
# MALLOC_ARENA_MAX: glibc's arena cap tstriton serve would otherwise restart itself under (docs/threads.md#malloc-arenas).
ENV NODE_ENV=production \
    ORT_DISABLE_TELEMETRY=1 \
    MALLOC_ARENA_MAX=2
# A numeric user, so that Kubernetes' runAsNonRoot can check it.
USER 10001:10001
EXPOSE 8000 8001 8002
# Ready means every model loaded (400 while loading and from SIGTERM on, while the server drains).
HEALTHCHECK --interval=10s --timeout=5s --start-period=60s --retries=3 \
    CMD ["node", "-e", "fetch(`http://127.0.0.1:${process.env.TSTRITON_HTTP_PORT || 8000}/v2/health/ready`).then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
ENTRYPOINT ["/usr/bin/tini", "--", "tstriton"]
CMD ["serve", "--model-repository", "/models"]

# --- gpu: the server with the loaders that onnxruntime-node's WebGPU provider (Dawn over Vulkan) needs -------
# The NVIDIA driver's Vulkan ICD (libGLX_nvidia) comes from the host through the NVIDIA container toolkit, which
# mounts it only when the driver capabilities include `graphics`. Run with --device nvidia.com/gpu=all (podman,
# CDI) or --gpus all (docker); on Kubernetes, request nvidia.com/gpu (the Helm chart's gpu.enabled).
# GPU_PACKAGES: the loaders, pinned to Debian bookworm's versions (an Ubuntu BASE_IMAGE names its own).
FROM server AS gpu
ARG GPU_PACKAGES="libvulkan1=1.3.* libglvnd0=1.6.* libegl1=1.6.* libgl1=1.6.* libglx0=1.6.* libgles2=1.6.* libopengl0=1.6.*"
USER 0:0
# GPU_PACKAGES is a list of package specs, split into words on purpose (SC2086); its default pins every version,
# which hadolint cannot see through the variable (DL3008).
# hadolint ignore=SC2086,DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends ${GPU_PACKAGES} \
    && rm -rf /var/lib/apt/lists/*
ENV NVIDIA_VISIBLE_DEVICES=all \
    NVIDIA_DRIVER_CAPABILITIES=compute,utility,graphics
USER 10001:10001

# --- runtime: the CPU server (default target) ----------------------------------------------------------------
FROM server AS runtime
