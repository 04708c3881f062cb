# Rollout Sentinel — the two commands a newcomer needs are `make demo` and `make test`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp

.PHONY: test check lint pytest venv debs demo-debs demo run clean node

venv: $(STAMP)

# From a wheelhouse cached outside the tree, downloaded once per pyproject.toml (the script says why).
$(STAMP): pyproject.toml
	sh scripts/venv.sh $(PYTHON) $(VENV)
	touch $@

# Debian packages run for real: the demo needs Prometheus; the suite also drives Chromium and
# exercises PostgreSQL and Redis, and builds and runs the image (IMAGE_DEBS, below). Installed through apt when run as root; otherwise the script
# names the one apt command to run.
DEMO_DEBS := prometheus
TEST_DEBS := prometheus chromium postgresql redis-server victoria-metrics

debs:
	@sh scripts/ensure-debian-packages.sh $(TEST_DEBS) $(IMAGE_DEBS)

demo-debs:
	@sh scripts/ensure-debian-packages.sh $(DEMO_DEBS)

# axe-core for the browser test's accessibility check (tests/ui/test_accessibility.py), pinned in
# package.json and package-lock.json: `npm ci` once, then a no-op until the lock file changes.
NODE_STAMP := node_modules/.installed-stamp

node: $(NODE_STAMP)

$(NODE_STAMP): package.json package-lock.json
	@command -v npm >/dev/null 2>&1 || { echo "make: npm is missing: install Node.js 20 with npm (Debian: apt-get install nodejs npm) to get axe-core for the accessibility test" >&2; exit 1; }
	npm ci --no-audit --no-fund
	touch $@

# ruff, then the layers of docs/architecture.md as import-linter contracts (pyproject.toml).
lint: venv
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports

# The suite runs the Kubernetes-facing tests on devcluster and on the real control plane
# (docs/testkit.md), so it needs the binaries: a no-op once built, ~15 min cold; without Go, one
# line says which Go to install. In parallel (pytest-xdist): each worker starts its own servers
# on free ports and has its own directories. Four workers on two cores fill the time the tests
# wait on servers; beyond that the run is CPU-bound, and tests/support/schedule.py starts the
# slow tests first (docs/testkit.md#parallel-runs has the measurements behind these defaults).
TEST_WORKERS ?= 4
TEST_DIST    ?= worksteal
# Python keeps the bytecode it compiles (in the gitignored __pycache__ directories) even where the
# environment says PYTHONDONTWRITEBYTECODE: otherwise every xdist worker rewrites and compiles all
# test modules again (~10 s of CPU each before its first test, measured) and each of the hundreds
# of Python processes the tests start compiles the project's modules again.
KEEP_BYTECODE := PYTHONDONTWRITEBYTECODE=
pytest: venv debs realcluster node
	$(KEEP_BYTECODE) $(BIN)/pytest -n $(TEST_WORKERS) --dist $(TEST_DIST) --durations=25 $(PYTEST_ARGS)

test: lint pytest

# The inner loop: lint and every test that needs no server (pure core, parsers, properties, unit
# tests). tests/support/tiers.py marks the others `server` from their fixtures and fails any
# unmarked test that starts a server, so this selection cannot grow slow unnoticed.
# CPU-bound, so one worker per core.
CHECK_WORKERS ?= 2
check: lint
	$(KEEP_BYTECODE) $(BIN)/pytest -m "not server" -q -n $(CHECK_WORKERS) --durations=10 $(PYTEST_ARGS)

# The operator and the web UI against the current kubeconfig context (or the in-cluster config)
# and SENTINEL_PROMETHEUS_URL; Ctrl-C stops both.
run: venv
	$(BIN)/python manage.py migrate --no-input
	@trap 'kill 0' INT TERM EXIT; \
	$(BIN)/python manage.py runoperator & \
	$(BIN)/gunicorn -c python:sentinel_site.gunicorn_conf sentinel_site.wsgi --bind 127.0.0.1:8000 --workers 2

clean:
	rm -rf $(VENV) .pytest_cache node_modules

# Everything local: devcluster, the CRD and a checkout Deployment, real Prometheus scraping a
# demo app that regresses after two minutes, the operator and the web UI on :8000.
# CLUSTER=real runs it on the real control plane instead (SPEC §9a), built first when needed.
CLUSTER ?= dev
demo: venv demo-debs $(if $(filter real,$(CLUSTER)),realcluster)
	SENTINEL_DEMO_CLUSTER=$(CLUSTER) $(BIN)/python -m demo

# The real control plane (docs/realcluster.md): kube-apiserver, kube-controller-manager,
# kube-scheduler and etcd, kwok (simulated nodes) and Prometheus 3.x (Kubernetes discovery), built
# with `go build` from the versions pinned in realcluster/{,kwok/,prometheus/}go.mod into a cache
# outside the tree keyed by version (~15 min cold on 2 quiet cores; a no-op once built).
# `python -m realcluster` runs them.
.PHONY: realcluster
realcluster:
	@bash realcluster/build.sh

# The image (Dockerfile) built with Debian's podman and buildah, as tests/deploy/test_image*.py
# run it: containers/build.sh, with the project's own containers.conf and image store
# (docs/operations.md, "The image"). IMAGE_BASE=release builds on the Dockerfile's pinned
# python:*-slim digest; the default, for machines that reach no container registry, is a base
# made from Debian packages with mmdebstrap (cached outside the tree).
IMAGE_DEBS := podman buildah mmdebstrap runc uidmap
.PHONY: image
image:
	@sh scripts/ensure-debian-packages.sh $(IMAGE_DEBS)
	containers/build.sh

# charts/rollout-sentinel regenerated from deploy/ (charts/generate.py), and Helm built from the
# Go module proxy at the version pinned in charts/helm.sh (cached outside the tree) to lint it.
.PHONY: helm
helm: venv
	$(BIN)/python charts/generate.py
	charts/helm.sh lint charts/rollout-sentinel --namespace rollout-sentinel
