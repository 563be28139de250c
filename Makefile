# The two commands a newcomer types: `make demo` and `make test`.  Each creates .venv if missing.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-dev

.PHONY: demo test bench lint wheelcheck clean realcheck

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# one environment with everything the demo, the tests and the benchmarks use
$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[dev,plots,parquet,distributed]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/iowatt run scenarios/library/checkpoint_llama405b_8gpu.yaml --format table
	$(BIN)/iowatt reproduce all --out results

lint: $(STAMP)
	$(BIN)/ruff check .

test: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/python -m pytest -n 2 -q -m "not realhw"
	$(BIN)/python -m pytest -q -p no:xdist -m realhw

# build the sdist and wheel, install the wheel in a fresh environment outside the checkout and run it
wheelcheck: $(STAMP)
	tools/wheelcheck.sh $(PYTHON)

# the real-hardware loop on this machine's disk (docs/realcheck.md): fio, calibrate, predict DLIO runs, run them, score.
# Needs dlio_benchmark (on PATH, or DLIO_BIN=folder holding it), mpirun and fio; the bundle lands in .realcheck/ (ignored by git)
DLIO_BIN ?= $(IOWATT_DLIO_BIN)
realcheck: $(STAMP)
	mkdir -p .realcheck/scratch
	$(BIN)/iowatt check-machine --scratch .realcheck/scratch $(if $(DLIO_BIN),--dlio-bin $(DLIO_BIN)) -o .realcheck/bundle-$$(date +%Y%m%d-%H%M%S)

bench: $(STAMP)
	$(BIN)/python benchmarks/run.py

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .hypothesis build dist
