# labkit: two commands do all set-up. See README.md.
#   make experiment   bootstrap .venv, check the machine (labkit doctor), run the reading comparison live, write results/
#   make test         bootstrap .venv, run lint, unit tests, exercise checks and nbval on notebooks/
#   make lab          start JupyterLab on notebooks/

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.labkit-installed
# nbval's settings live with the tests (tests/nbval/), not in the folder learners open.
NBVAL  := --nbval --nbval-current-env --nbval-sanitize-with tests/nbval/sanitize.cfg -p tests.nbval.ignore_stderr

.PHONY: test test-bench experiment lab bench notebooks data lint clean

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit("labkit needs Python 3.10 or newer; this is " + sys.version.split()[0] + ". Run: make PYTHON=python3.11 ...") if sys.version_info < (3, 10) else None'
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@echo "installing labkit and its dependencies into $(VENV) (llama-cpp-python compiles llama.cpp once: ~5 min on 2 cores)"
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --upgrade pip
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[dev]'
	@touch $(STAMP)

# Two workers: much of the suite waits on child processes (sandboxes, servers, kernels), so two keep both cores
# busy. --dist loadfile keeps each file on one worker: a notebook's cells run in order in one kernel, and a
# module's server fixture starts once. TEST_WORKERS=0 runs it in this process, one test at a time.
# --durations lists the slowest tests at the end: where the suite's time goes, on every run.
TEST_WORKERS ?= 2

test: $(STAMP)
	$(BIN)/ruff check labkit tests scripts exercises notebooks
	$(BIN)/python -m pytest tests notebooks/*.ipynb $(NBVAL) -m "not bench" -n $(TEST_WORKERS) --dist loadfile --durations=30

# The live checks that make test leaves out (marked bench: each is the small form of a recorded benchmark).
test-bench: $(STAMP)
	$(BIN)/python -m pytest tests -m bench

# The doctor runs first (a few seconds): a machine that cannot run the model gets advice, not a segfault.
# MODEL=qwen2.5-coder-1.5b runs the opt-in model (labkit models fetch it first); ARGS=--full runs every task.
# --resume: a second run continues (or just reports) the recording in results/reading-MODEL instead of refusing it.
experiment: $(STAMP)
	@$(BIN)/labkit doctor --for experiment || { echo "make experiment: stopped before the run; fix what labkit doctor says above, then run make experiment again."; exit 1; }
	$(BIN)/labkit compare reading $(if $(MODEL),--model $(MODEL)) --out results/reading-$(or $(MODEL),gemma3-270m) --resume $(ARGS)

# JupyterLab refuses to start as root (the usual user in a container) unless told --allow-root.
LAB_ROOT := $(if $(filter 0,$(shell id -u)),--allow-root)

# Each lesson's source (NN_topic.py) is paired with its notebook by jupytext (notebooks/jupytext.toml): the file
# browser lists the lesson once, as the notebook with its outputs, and saving it writes both files.
LAB_HIDE := __pycache__ '*.pyc' '*.pyo' .DS_Store '*~' '[0-9][0-9]_*.py' jupytext.toml

lab: $(STAMP)
	$(if $(LAB_ROOT),@echo "running as root (as in a container): starting JupyterLab with --allow-root")
	$(BIN)/jupyter lab $(LAB_ROOT) $(foreach glob,$(LAB_HIDE),--ContentsManager.hide_globs=$(glob)) notebooks

bench: $(STAMP)
	$(BIN)/labkit bench core
	$(BIN)/labkit bench inference
	$(BIN)/labkit bench fuzz --schedules 10000
	$(BIN)/labkit bench crash --trials 120
	$(BIN)/labkit bench crash-recorders --out data/bench/crash-recorders.json

# Rebuild every executed notebook from its py:percent source (run after changing a lesson's .py outside Jupyter).
notebooks: $(STAMP)
	$(BIN)/python scripts/build_notebook.py notebooks/[0-9]*.py

# Regenerate the synthetic records and the five lesson traces (byte-identical to the committed ones).
data: $(STAMP)
	$(BIN)/python scripts/make_records.py
	$(BIN)/python scripts/make_traces.py

lint: $(STAMP)
	$(BIN)/ruff check labkit tests scripts exercises notebooks

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache
