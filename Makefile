# The two commands: `make demo` (train digits both ways) and `make test`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: demo test bench lint clean fuzz

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

demo: $(STAMP)
	$(PY) examples/digits.py

test: $(STAMP)
	$(VENV)/bin/ruff check .
	$(PY) -m pytest

bench: $(STAMP)
	env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE $(PY) -m bench

lint: $(STAMP)
	$(VENV)/bin/ruff check .

clean:
	rm -rf $(VENV) build dist src/*.egg-info .pytest_cache .ruff_cache

# differential fuzzer: `make fuzz N=10000` (failing programs become reproducers in fuzz-failures/)
N ?= 1000
fuzz: $(STAMP)
	$(PY) tests/fuzz/fuzz_main.py --n $(N) --out fuzz-failures
