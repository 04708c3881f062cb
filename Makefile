# Rollout Sentinel — the two commands a newcomer needs are `make demo` and `make test`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp

.PHONY: test lint pytest venv debs demo run clean

venv: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --disable-pip-version-check -e '.[test]'
	touch $@

# Debian packages the suite runs for real (Prometheus, Chromium). Installed through apt
# when run as root; otherwise the script names the one apt command to run.
debs:
	@sh scripts/ensure-debian-packages.sh prometheus chromium

lint: venv
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

pytest: venv debs
	$(BIN)/pytest $(PYTEST_ARGS)

test: lint pytest

clean:
	rm -rf $(VENV) .pytest_cache
