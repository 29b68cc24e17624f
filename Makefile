# acl-operator: every target runs on Node >= 22.19. When the system Node is older (the machines here
# have Node 20), a project-local Node 24 LTS is installed from the npm registry into .tools/ and put
# first on PATH, so `make run` and `make test` need no step from the user.
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

NODE_VERSION := 24.21.0
TOOLS_DIR := $(CURDIR)/.tools
LOCAL_NODE_DIR := $(TOOLS_DIR)/node-$(NODE_VERSION)
LOCAL_NODE := $(LOCAL_NODE_DIR)/node_modules/node/bin/node

# "yes" when the node on PATH satisfies engines.node (>= 22.19).
SYSTEM_NODE_OK := $(shell node -e 'const [a,b]=process.versions.node.split(".").map(Number);process.exit(a>22||(a===22&&b>=19)?0:1)' >/dev/null 2>&1 && echo yes)
ifeq ($(SYSTEM_NODE_OK),yes)
NODE_DEP :=
else
NODE_DEP := $(LOCAL_NODE)
export PATH := $(LOCAL_NODE_DIR)/node_modules/node/bin:$(PATH)
endif

INSTALL_STAMP := node_modules/.install-stamp
MANIFESTS ?= examples
STATE_DIR ?= .acl-state
LISTEN ?= 127.0.0.1:8443
OPS_LISTEN ?= 127.0.0.1:9090
CONSOLE_LISTEN ?= 127.0.0.1:8080

.PHONY: help install build typecheck lint format test test-timing test-opa test-policies run render crds screenshots bench bench-http bench-decision-log bench-shadow bench-fleet bench-flood bench-propagation bench-kube bench-memory bench-signing bench-steady bench-steady-kube bench-console bench-console-large bench-replay clean node-version

help: ## Show the targets
	@grep -E '^[a-z0-9-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-12s %s\n", $$1, $$2}'

$(LOCAL_NODE):
	@echo "System Node ($$(node --version 2>/dev/null || echo none)) is older than 22.19: installing Node $(NODE_VERSION) from the npm registry into $(LOCAL_NODE_DIR)" >&2
	@mkdir -p $(LOCAL_NODE_DIR)
	@cd $(LOCAL_NODE_DIR) && echo '{"private":true}' > package.json && \
	  npm install --no-audit --no-fund --no-package-lock --loglevel=error node@$(NODE_VERSION) >&2
	@test -x $(LOCAL_NODE) || { echo "Node $(NODE_VERSION) did not install into $(LOCAL_NODE_DIR)" >&2; exit 1; }
	@echo "Using $$($(LOCAL_NODE) --version) from $(LOCAL_NODE_DIR)" >&2

# Reinstall from the lockfile whenever it (or package.json) is newer than the last install.
$(INSTALL_STAMP): package.json package-lock.json | $(NODE_DEP)
	npm ci --no-audit --no-fund
	@touch $@

install: $(INSTALL_STAMP) ## Install dependencies from package-lock.json (and Node 24 if needed)

node-version: | $(NODE_DEP) ## Print the Node the targets run on
	@echo "$$(command -v node) $$(node --version)"

build: $(INSTALL_STAMP) ## Compile TypeScript into dist/
	npx tsc -p tsconfig.build.json

typecheck: $(INSTALL_STAMP) ## Type-check sources, tests, benchmarks and scripts
	npx tsc -p tsconfig.json

lint: $(INSTALL_STAMP) ## Check formatting and lint (biome), dead code (knip), file sizes and the documented dependencies
	npx biome ci --error-on-warnings .
	npx knip --no-progress
	npx vitest run test/house.test.ts

format: $(INSTALL_STAMP) ## Format every file and apply safe lint fixes in place (biome)
	npx biome check --write .

test: typecheck ## Type-check, run every test, then test/timing alone, then the example test files (OPA tests run when OPA_BIN is set)
	@rm -f .vitest-results.json
	npx vitest run --reporter=default --reporter=json --outputFile.json=.vitest-results.json || { node scripts/test-summary.ts; exit 1; }
	@node scripts/test-summary.ts
	@$(MAKE) --no-print-directory test-timing
	@$(MAKE) --no-print-directory test-policies

# The tests whose contract is a latency bound, one file at a time with nothing else running (vitest.timing.config.ts).
test-timing: $(INSTALL_STAMP) ## Run test/timing alone: edits applied in time, decisions fast under hostile uploads
	@rm -f .vitest-results-timing.json
	npx vitest run --config vitest.timing.config.ts --reporter=default --reporter=json --outputFile.json=.vitest-results-timing.json || { node scripts/test-summary.ts .vitest-results-timing.json --timing-only; exit 1; }
	@node scripts/test-summary.ts .vitest-results-timing.json --timing-only

# The cases of the *.test.yaml files under MANIFESTS (examples/) against its manifests: natively, and with
# OPA_BIN set also in that OPA on every bundle (docs/testing.md).
test-policies: $(INSTALL_STAMP) ## Run acl-operator test on examples/ (OPA_BIN adds OPA on the bundles)
	node src/cli.ts test --manifests $(MANIFESTS)$${OPA_BIN:+ --opa "$$OPA_BIN"}

test-opa: $(INSTALL_STAMP) ## Run only the tests against a real OPA (needs OPA_BIN; fails if none ran)
	@test -n "$${OPA_BIN:-}" || { echo "Set OPA_BIN to the path of an opa binary (e.g. OPA_BIN=\$$(../shared/tools/opa-bin 0.61))" >&2; exit 2; }
	@rm -f .vitest-results-opa.json
	npx vitest run test/opa --reporter=default --reporter=json --outputFile.json=.vitest-results-opa.json || { node scripts/test-summary.ts .vitest-results-opa.json --opa-only; exit 1; }
	@node scripts/test-summary.ts .vitest-results-opa.json --opa-only

run: build ## Build, then serve examples/ standalone over HTTPS on localhost (Ctrl-C stops)
	node dist/cli.js serve --manifests $(MANIFESTS) --state-dir $(STATE_DIR) --tls-self-signed --listen $(LISTEN) --ops-listen $(OPS_LISTEN) --console-listen $(CONSOLE_LISTEN)

render: build ## Print the Rego and bundle listing for the manifests in examples/
	node dist/cli.js render --manifests $(MANIFESTS)

crds: $(INSTALL_STAMP) ## Regenerate crds/*.yaml from the zod schemas in src/api
	node scripts/gen-crds.ts

# The console on a temporary copy of examples/ with a little activity, in Debian's chromium (or CHROMIUM);
# OPA_BIN=<opa> shows the playground deciding with that OPA too.
screenshots: $(INSTALL_STAMP) ## Write the console's screenshots (1280 px and phone) to docs/console/*.png
	node scripts/screenshots.ts

bench: $(INSTALL_STAMP) ## Run every benchmark: bench/run.ts, then bench/http.ts (see bench-http)
	node bench/run.ts
	@echo
	node bench/http.ts

# Servers on core 0, load on core 1, about 5 minutes. OPA_BIN=<opa> adds OPA's REST API on the same
# bundle; BENCH_QUICK=1 is a one-minute smoke check for CI (its figures are not for quoting);
# BENCH_BASELINE=<another checkout> measures that tree's decision and 304 paths in the same rounds and
# prints this tree / baseline (about 12 minutes; docs/benchmarks.md).
bench-http: $(INSTALL_STAMP) ## Run the HTTP benchmark (OPA_BIN adds OPA; BENCH_QUICK=1: smoke check; BENCH_BASELINE=<checkout>: ratios to it)
	node bench/http.ts

# The same service with --decision-log off, to a file and to /dev/null, on core 0; about 2 minutes.
bench-decision-log: $(INSTALL_STAMP) ## What the decision log costs POST /authorization (BENCH_QUICK=1: smoke check)
	node bench/decision-log.ts

# 1,000 simulated OPAs (status every 10 s, a 100-decision upload every 10 s) against the service and
# against raw node:http floors; about 16 minutes (BENCH_QUICK=1: about 3).
# Decisions of a tenant with 100 Proposed rules (shadow decisions) against none, and against a proposal
# in another tenant only: server CPU per decision, ratios in the same run (about 2 minutes).
bench-shadow: $(INSTALL_STAMP) ## What shadow decisions cost POST /authorization: 0 vs 100 Proposed rules (BENCH_QUICK=1: smoke check)
	node bench/shadow.ts

bench-fleet: $(INSTALL_STAMP) ## What an OPA fleet's status reports and decision logs cost the service
	node bench/fleet.ts

# The flood test's runs as a benchmark: decisions while 1, 4 and 16 hostile uploads arrive at once, against
# the quiet run of the same process, and the service's memory; about a minute (BENCH_QUICK=1: less).
bench-flood: $(INSTALL_STAMP) ## Decision latency and memory under a flood of hostile OPA uploads, against quiet
	node bench/flood.ts

# Real OPAs on long polling: a rule edit until every OPA reports it active, against OPA's plain polling.
bench-propagation: $(INSTALL_STAMP) ## Edit → every real OPA active (needs OPA_BIN, e.g. $$(../shared/tools/opa-bin 1.1))
	@test -n "$${OPA_BIN:-}" || { echo "make bench-propagation needs a real OPA: OPA_BIN=/path/to/opa (../shared/tools/opa-bin 1.1 prints one)" >&2; exit 2; }
	node bench/propagation.ts

# acl-operator replay on 1,000,000 generated decisions of examples/, on core 0: time, lines/s and peak RSS at
# 100,000 and 1,000,000 (flat memory), against reading + JSON-parsing the same file; OPA_BIN=<opa> adds the
# rate with --opa on 20,000. About 2 minutes (BENCH_QUICK=1: a smoke check on 10,000 and 100,000).
bench-replay: $(INSTALL_STAMP) ## Replay of 1,000,000 recorded decisions: time, rate, memory (OPA_BIN adds --opa)
	node bench/replay.ts

# Decisions while policy changes: 10,000 rules, one edited every second (BENCH_DIRECTORY=1 adds a tenant of
# 500,000 Directory entities, one edited every second; BENCH_QUICK=1 is a smoke check). Needs 2 cores and taskset.
bench-steady: $(INSTALL_STAMP) ## Decision p99/max and throughput, quiet vs while rules change (standalone)
	node bench/steady.ts

bench-steady-kube: $(INSTALL_STAMP) ## The same runs with the operator on a real API server (E2E_KUBECONFIG or KUBECONFIG)
	@test -n "$${E2E_KUBECONFIG:-$${KUBECONFIG:-}}" || { echo "make bench-steady-kube needs a cluster with the CRDs of crds/ installed: set E2E_KUBECONFIG or KUBECONFIG" >&2; exit 2; }
	E2E_KUBECONFIG="$${E2E_KUBECONFIG:-$$KUBECONFIG}" node bench/steady/kube.ts

# Against a real API server with the CRDs of crds/ installed (E2E_KUBECONFIG, else KUBECONFIG; e.g. local-kube),
# about 4-5 minutes. Creates namespaces bench-kube-* (10,200 objects) and deletes them at the end unless
# BENCH_KEEP=1; BENCH_QUICK=1 is a one-minute smoke check; BENCH_CPU_PROF=<dir> profiles the 10,000-rule starts.
bench-kube: $(INSTALL_STAMP) ## Propagation, startup and memory on a real API server (E2E_KUBECONFIG or KUBECONFIG)
	@test -n "$${E2E_KUBECONFIG:-$${KUBECONFIG:-}}" || { echo "make bench-kube needs a cluster with the CRDs of crds/ installed: set E2E_KUBECONFIG or KUBECONFIG" >&2; exit 2; }
	E2E_KUBECONFIG="$${E2E_KUBECONFIG:-$$KUBECONFIG}" node bench/kube.ts

# Memory per object: `node src/cli.ts serve` loaded vs empty, after full collections, with a heap snapshot of
# each summed by kind: 10,000 Rules (standalone), 100,000 Directory entities, and with E2E_KUBECONFIG or
# KUBECONFIG 10,200 objects in namespaces bench-mem-* (deleted at the end unless BENCH_KEEP=1); about
# 4 minutes; BENCH_QUICK=1 is a one-minute smoke check.
bench-memory: $(INSTALL_STAMP) ## Memory per Rule, per Kubernetes object and per Directory entity, with the heap by type
	node bench/memory.ts

bench-signing: $(INSTALL_STAMP) ## Signed bundles: build and the 304 path against unsigned, in one run (BENCH_QUICK=1: smoke check)
	node bench/signing.ts

# The console in a real chromium (Debian's, or CHROMIUM): the overview's first page load (bytes, time)
# against raw node:http serving the same bytes, and decisions with the tenant page open and live against
# closed; about 2 minutes (BENCH_QUICK=1: a smoke check). Needs 2 cores and taskset.
bench-console: $(INSTALL_STAMP) ## Console first page load, and decisions with it open and live vs closed
	node bench/console.ts

bench-console-large: $(INSTALL_STAMP) ## Console pages on a 10,000-rule tenant against its sign-in page
	node bench/console-large.ts

clean: ## Remove build output (keeps node_modules and .tools)
	rm -rf dist coverage .vitest-results.json .vitest-results-opa.json .vitest-results-timing.json

# --- Kubernetes: container image and a local kind cluster ------------------------------------------
# kind-up and e2e need docker, kind and kubectl on PATH. Every kubectl call names the kind cluster's context, so these
# targets never touch whatever cluster your current context points at.
KIND_CLUSTER ?= acl-operator
KIND_CONTEXT := kind-$(KIND_CLUSTER)
IMAGE ?= acl-operator:dev
CONTAINER_TOOL ?=
# deploy/30-deployment.yaml runs acl-operator:dev; kind-up builds and loads exactly that tag.
KIND_IMAGE := acl-operator:dev

.PHONY: image kind-up e2e kind-down

# Docker when its engine answers; otherwise podman, then buildah (the same Dockerfile; with
# local-kube --node, `eval "$$(local-kube env --node)"` first so they use the storage holding the
# base image). CONTAINER_TOOL=docker|podman|buildah chooses one.
image: ## Build the container image with docker, podman or buildah (IMAGE=acl-operator:dev), and print its size
	@tool="$(CONTAINER_TOOL)"; \
	if [ -z "$$tool" ]; then \
	  if command -v docker >/dev/null 2>&1 && docker info >/dev/null 2>&1; then tool=docker; \
	  elif command -v podman >/dev/null 2>&1; then tool=podman; \
	  elif command -v buildah >/dev/null 2>&1; then tool=buildah; \
	  else echo "make image needs docker (with a running engine), podman or buildah: none was found" >&2; exit 1; fi; \
	fi; \
	case "$$tool" in buildah) build="buildah bud";; *) build="$$tool build";; esac; \
	echo "Building $(IMAGE) with $$tool" >&2; \
	$$build -t $(IMAGE) . || exit 1; \
	case "$$tool" in buildah) size=$$(buildah inspect --type image --format '{{.FromImageID}}' $(IMAGE) >/dev/null && buildah images --format '{{.Size}}' $(IMAGE));; \
	  *) size=$$($$tool image inspect --format '{{.Size}}' $(IMAGE) | awk '{printf "%.0f MB", $$1 / 1000000}');; esac; \
	echo "$(IMAGE): $$size" >&2

kind-up: ## Create the kind cluster (if missing), load the image, install CRDs and the operator
	@if kind get clusters 2>/dev/null | grep -x '$(KIND_CLUSTER)' >/dev/null; then \
	  echo "kind cluster $(KIND_CLUSTER) exists"; \
	else \
	  kind create cluster --name $(KIND_CLUSTER); \
	fi
	$(MAKE) image IMAGE=$(KIND_IMAGE)
	kind load docker-image $(KIND_IMAGE) --name $(KIND_CLUSTER)
	kubectl --context $(KIND_CONTEXT) apply -f crds/
	kubectl --context $(KIND_CONTEXT) wait --for=condition=Established --timeout=60s \
	  crd/rules.acl.policyagent.dev crd/connectors.acl.policyagent.dev crd/bundles.acl.policyagent.dev
	kubectl --context $(KIND_CONTEXT) apply -f deploy/
	@# The tag stays acl-operator:dev from build to build: restart so the pods run the image just loaded.
	kubectl --context $(KIND_CONTEXT) -n acl-system rollout restart deploy/acl-operator
	kubectl --context $(KIND_CONTEXT) -n acl-system rollout status deploy/acl-operator --timeout=180s

# test/e2e starts its own operators (one namespace each), so the installed one is scaled to zero
# meanwhile: two leaders would both write the test namespaces. Then the installed operator is back
# for the OPA sidecar example.
e2e: $(INSTALL_STAMP) ## On the kind cluster (make kind-up): test/e2e, then the OPA sidecar example end to end
	kind get kubeconfig --name $(KIND_CLUSTER) > .kind-kubeconfig
	kubectl --context $(KIND_CONTEXT) -n acl-system scale deploy/acl-operator --replicas=0
	E2E_KUBECONFIG=$(CURDIR)/.kind-kubeconfig npx vitest run test/e2e || { kubectl --context $(KIND_CONTEXT) -n acl-system scale deploy/acl-operator --replicas=2; exit 1; }
	kubectl --context $(KIND_CONTEXT) -n acl-system scale deploy/acl-operator --replicas=2
	kubectl --context $(KIND_CONTEXT) -n acl-system rollout status deploy/acl-operator --timeout=180s
	KUBE_CONTEXT=$(KIND_CONTEXT) bash deploy/kind/e2e.sh

kind-down: ## Delete the kind cluster
	kind delete cluster --name $(KIND_CLUSTER)

kind-test-cluster: $(INSTALL_STAMP) ## The cluster tier (test/cluster) on the kind cluster (make kind-up first)
	kind get kubeconfig --name $(KIND_CLUSTER) > .kind-kubeconfig
	docker tag $(KIND_IMAGE) $(IMAGE_NEXT)
	kind load docker-image $(IMAGE_NEXT) --name $(KIND_CLUSTER)
	$(MAKE) --no-print-directory test-cluster CLUSTER_KUBECONFIG=$(CURDIR)/.kind-kubeconfig

# --- The cluster tier on a real node without Docker: ../shared/tools/local-kube up --node -------------
# A kube-apiserver, kubelet, containerd, scheduler and kube-proxy on this machine (v1.20), the
# stand-in base images under their public names, and our image built from the unmodified Dockerfile
# with podman and loaded into the node as acl-operator:dev and acl-operator:dev-next (the upgrade's
# "new version": the same build under another tag).
LOCAL_KUBE ?= $(abspath ../shared/tools/local-kube)
CLUSTER_DIR ?= /tmp/acl-node
IMAGE_NEXT := acl-operator:dev-next
CLUSTER_KUBECONFIG ?= $(CLUSTER_DIR)/kubeconfig

.PHONY: kind-test-cluster cluster-up test-cluster bench-cluster cluster-down

cluster-up: ## Start local-kube's real node, build our image with podman, load it (needs root and ../shared/tools/local-kube)
	@test -x "$(LOCAL_KUBE)" || { echo "cluster-up needs local-kube ($(LOCAL_KUBE)); with Docker use make kind-up" >&2; exit 1; }
	@set -e; start=$$(date +%s); \
	eval "$$($(LOCAL_KUBE) up --node --dir $(CLUSTER_DIR))"; \
	$(LOCAL_KUBE) images --dir $(CLUSTER_DIR); \
	$(MAKE) --no-print-directory image CONTAINER_TOOL=podman IMAGE=$(KIND_IMAGE); \
	podman tag $(KIND_IMAGE) $(IMAGE_NEXT); \
	$(LOCAL_KUBE) load $(KIND_IMAGE) $(IMAGE_NEXT) --dir $(CLUSTER_DIR); \
	echo "cluster-up took $$(( $$(date +%s) - start )) s; kubeconfig: $(CLUSTER_KUBECONFIG)" >&2

test-cluster: $(INSTALL_STAMP) ## The cluster tier (test/cluster): install, webhook, sidecar, failover, upgrades, 10,000 rules, uninstall in real pods
	@test -n "$(CLUSTER_KUBECONFIG)" -a -f "$(CLUSTER_KUBECONFIG)" || { echo "test-cluster needs CLUSTER_KUBECONFIG (make cluster-up, or kind: make kind-test-cluster)" >&2; exit 1; }
	@start=$$(date +%s); \
	CLUSTER_KUBECONFIG=$(CLUSTER_KUBECONFIG) CLUSTER_IMAGE=$(KIND_IMAGE) CLUSTER_IMAGE_NEXT=$(IMAGE_NEXT) npx vitest run --config vitest.cluster.config.ts; rc=$$?; \
	echo "the cluster tier took $$(( $$(date +%s) - start )) s" >&2; exit $$rc

bench-cluster: build ## In real pods (CLUSTER_KUBECONFIG, make cluster-up): decisions through the Service against the same build outside, the failover gap, memory per object up to the limit
	@test -n "$(CLUSTER_KUBECONFIG)" -a -f "$(CLUSTER_KUBECONFIG)" || { echo "bench-cluster needs CLUSTER_KUBECONFIG (make cluster-up)" >&2; exit 1; }
	CLUSTER_KUBECONFIG=$(CLUSTER_KUBECONFIG) CLUSTER_IMAGE=$(KIND_IMAGE) node bench/cluster.ts

cluster-down: ## Stop local-kube's real node
	$(LOCAL_KUBE) down --dir $(CLUSTER_DIR)
