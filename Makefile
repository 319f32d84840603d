# Two user-facing targets: `make run` (the main job) and `make test` (ruff, mypy, pytest).
# Each one prepares its own virtual environment on a fresh machine.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: run test

# Serves the notes app over MCP in the foreground (Ctrl-C stops it); its data stays in .mycelium-data/.
run: $(VENV)/.run-installed
	$(BIN)/python examples/quickstart.py
	$(BIN)/mycelium serve examples/notes_app.py

test: $(VENV)/.dev-installed
	$(BIN)/ruff check .
	$(BIN)/mypy
	$(BIN)/pytest

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.run-installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e .
	touch $@

$(VENV)/.dev-installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e ".[dev]"
	touch $@ $(VENV)/.run-installed
