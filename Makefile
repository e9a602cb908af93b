# Thin entry points; the work lives in npm scripts and hack/.
#   make demo    the main job: a local control plane, the operator, Operations end to end
#   make test    every test (builds missing tools first; see README)
SHELL := /bin/bash
export PATH := $(CURDIR)/node_modules/.bin:$(PATH)

DEPS := node_modules/.vws-installed

.PHONY: deps tools test test-unit test-integration demo bench generate check-generated bundle catalog catalog-validate community images mirror release chart krew lint format local-cluster clean

# `npm install --no-save`, not `npm ci`: the registry mirror on these machines lacks some other
# platforms' optional packages (e.g. @rollup/rollup-android-*), so the lock can never list them and
# `npm ci` refuses it as out of sync. With exact pins and the committed lock, install is as repeatable.
$(DEPS): package.json package-lock.json
	npm install --no-save --no-audit --no-fund --loglevel=error
	@node --version | grep -q '^v24\.' || { echo "node_modules/.bin/node is not Node 24" >&2; exit 1; }
	@# The commit-msg hook (subjects of at most 72 characters), in a git checkout.
	@! git rev-parse --git-dir >/dev/null 2>&1 || git config core.hooksPath hack/hooks
	@touch $@

deps: $(DEPS)

tools: deps ## build every pinned tool into bin/ and fetch the upstream CRDs
	hack/build-tools.sh all
	hack/fetch-crds.sh

test: deps ## lint, typecheck, import layers, generated-file check, unit and integration tests; prints totals
	hack/test.sh

test-unit: deps
	npx vitest run --project unit

test-integration: deps
	hack/build-tools.sh cluster && hack/fetch-crds.sh && npx vitest run --project integration

# make demo [NODE=real|kwok]: on a real node where the command really runs (the default as root), or on
# kwok where pods are faked (the default otherwise).
demo: deps
	VWS_NODE=$(NODE) hack/demo.sh

# make bench [QUICK=1]: the operator beside kube-controller-manager and raw client writes, each scenario
# on its own kwok cluster (docs/performance.md). Not part of `make test`. The full run (~1 h on 2 cores)
# updates docs/performance.md; QUICK=1 (~15 min) writes only .cache/bench/. Run it under the shared lock.
bench: deps
	hack/build-tools.sh cluster
	node bench/run.ts $(if $(QUICK),--quick,--docs)

generate: deps
	npm run generate

check-generated: deps
	npm run check:generated

# make bundle [VERSION=x.y.z] [IMG=<repo>@sha256:<digest>] [HELM_IMG=<repo>@sha256:<digest>]: the OLM bundle
# (CSV, metadata, bundle.Dockerfile) for package.json's version (or VERSION) and the pinned images (or IMG,
# HELM_IMG); see docs/release.md. BUNDLE_DIR=<dir> writes the complete bundle there instead of bundle/.
bundle: deps
	VERSION=$(VERSION) IMG=$(IMG) HELM_IMG=$(HELM_IMG) \
	  $(if $(BUNDLE_DIR),node hack/bundle.ts --output-dir $(BUNDLE_DIR),npm run --silent bundle)

# make images [REGISTRY=host[:port]/namespace] [PRINT=1] [HELM=ours] [SERVE=1] [INSECURE=1]: the operator, bundle
# and catalog images without a Docker daemon, pushed by digest (default: to a loopback registry it starts and
# stops; PRINT=1 only computes the digests). Prints the IMG for make bundle. See docs/release.md.
images: deps
	hack/build-tools.sh images opm helm
	node hack/images.ts $(if $(REGISTRY),--registry $(REGISTRY)) $(if $(PRINT),--print) $(if $(HELM),--helm $(HELM)) \
	  $(if $(SERVE),--serve) $(if $(INSECURE),--insecure)

# make mirror SRC=<catalog image> DEST=<registry/namespace> [OUT=dir] [DRY_RUN=1] [INSECURE=1] [TOOL=skopeo]: copy the catalog and
# every image it references by digest, write the ImageDigestMirrorSet/ImageContentSourcePolicy (docs/disconnected.md).
mirror: deps
	hack/build-tools.sh images opm
	node hack/mirror.ts $(SRC) $(DEST) $(if $(OUT),--out $(OUT)) $(if $(DRY_RUN),--dry-run) $(if $(INSECURE),--insecure) $(if $(TOOL),--tool $(TOOL))

# make catalog [OUT=dir]: render catalog/template.yaml (opm alpha render-template basic, migrated to
# olm.csv.metadata) from its bundle images, pushed to a loopback registry it starts; default bin/rendered-catalog.
catalog: deps
	hack/build-tools.sh olm images && node hack/catalog.ts render $(if $(OUT),--out $(OUT))

# The catalog template renders and validates, and operator-sdk bundle validate reports nothing (also run by make test).
catalog-validate: deps
	hack/build-tools.sh olm && npx vitest run --project unit hack/catalog.test.ts hack/bundle.test.ts

# make community [OUT=dir]: the operator as a community catalog submission (OUT/fbc, OUT/bundle-only; default
# bin/community), checked by the pipeline's static tests and every operator-sdk validator against the
# images pushed to a loopback registry (docs/release.md; also run by make test).
community: deps
	hack/build-tools.sh olm images helm && node hack/community.ts $(if $(OUT),--out $(OUT))

# make release REGISTRY=host[:port]/namespace [VERSION=x.y.z] [OUT=dist] [INSECURE=1] [SKIP=krew,...]: the release
# pipeline (hack/release.ts, docs/release.md): pins, bundle, images pushed by digest, published bundles, every
# validator and the community submission, the chart (oci://REGISTRY/charts), the kubectl plugin. Leaves the
# working tree as the release commit and OUT as the release's assets (OUT/release.json names every digest).
release: deps
	@test -n "$(REGISTRY)" || { echo "make release needs REGISTRY=host[:port]/namespace" >&2; exit 2; }
	hack/build-tools.sh olm images helm
	node hack/release.ts --registry $(REGISTRY) $(if $(VERSION),--version $(VERSION)) $(if $(OUT),--out $(OUT)) \
	  $(if $(INSECURE),--insecure) $(if $(SKIP),--skip $(SKIP))

# The Helm chart of the install without OLM (deploy/chart/vworkspace-operator), regenerated from the bundle.
chart: deps
	node hack/chart.ts

# make krew [OUT=dist/krew]: the kubectl plugin as one executable per platform and its krew manifest.
krew: deps
	node hack/krew.ts --out $(or $(OUT),dist/krew)

lint: deps
	npm run lint && npm run typecheck && npm run check:imports

format: deps
	npm run format

local-cluster: deps
	hack/build-tools.sh core && hack/fetch-crds.sh && node hack/local-cluster.ts

clean:
	rm -rf bin node_modules
