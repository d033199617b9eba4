# The two commands: `make demo` (train digits both ways) and `make test`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: demo test bench lint clean fuzz docs docs-serve

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

# the demo needs only the `examples` and `onnx` extras (its export check), not the test tools
DEMO_STAMP := $(VENV)/.installed-examples
$(DEMO_STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[examples,onnx]'
	touch $(DEMO_STAMP)

demo: $(DEMO_STAMP)
	$(PY) examples/digits.py

# the documentation site (MkDocs + Material) into site/; pictures drawn by docs/_build/
DOCS_STAMP := $(VENV)/.installed-docs
$(DOCS_STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[docs]'
	touch $(DOCS_STAMP)

docs: $(DOCS_STAMP)
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build

docs-serve: $(DOCS_STAMP)
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs serve

test: $(STAMP)
	$(VENV)/bin/ruff check .
	$(PY) -m pytest

bench: $(STAMP)
	env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE $(PY) -m bench

lint: $(STAMP)
	$(VENV)/bin/ruff check .

clean:
	rm -rf $(VENV) build dist site docs/pictures src/*.egg-info .pytest_cache .ruff_cache

# differential fuzzer: `make fuzz N=10000 [MODE=nan|unknown|all] [JOBS=2] [SEED=0]` (failing
# programs become reproducers in fuzz-failures/; docs/debugging.md)
N ?= 1000
MODE ?= default
JOBS ?= 1
SEED ?= 0
fuzz: $(STAMP)
	$(PY) tests/fuzz/fuzz_main.py --n $(N) --mode $(MODE) --jobs $(JOBS) --seed $(SEED) --out fuzz-failures
