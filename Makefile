# Two user-facing targets: `make run` (the main job) and `make test` (ruff, mypy, pytest).
# Each one prepares its own virtual environment on a fresh machine.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# Third-party MCP servers for tests/thirdparty, the MCP Inspector the banner names (tests/mcp/test_inspector.py)
# and the official MCP conformance suite (tests/mcp/test_conformance.py), with the Node (>= 22) both need,
# from npm's `node` package; pinned one `package@version` a line; git ignores the folder.
NODE_SERVERS := .thirdparty
NODE_PINS := tests/thirdparty/npm-packages.txt
# nginx for tests/deployment (replicas behind a real proxy), from Debian's packages; a stamp in .thirdparty/.
NGINX_STAMP := $(NODE_SERVERS)/.nginx-installed
# Chromium for the approvals page's browser test (driven by Playwright at /usr/bin/chromium), from Debian's
# packages; a stamp in .thirdparty/.
CHROMIUM_STAMP := $(NODE_SERVERS)/.chromium-installed

.PHONY: run test

# Serves the notes app over MCP in the foreground (Ctrl-C stops it); its data stays in .mycelium-data/.
run: $(VENV)/.run-installed
	$(BIN)/python examples/quickstart.py
	$(BIN)/mycelium serve examples/notes_app.py

test: $(VENV)/.dev-installed $(NODE_SERVERS)/.installed $(NGINX_STAMP) $(CHROMIUM_STAMP)
	$(BIN)/ruff check .
	$(BIN)/mypy
	$(BIN)/pytest -n auto  # a worker per core, each with its own temp folders and its own PostgreSQL

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.run-installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e .
	touch $@

$(VENV)/.dev-installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e ".[dev]"
	touch $@ $(VENV)/.run-installed

# Re-run only when the pins change. Without npm, or when the install fails (offline), the
# tests that need these packages skip and say why; nothing else depends on them.
$(NODE_SERVERS)/.installed: $(NODE_PINS)
	@if ! command -v npm >/dev/null 2>&1; then \
		echo "npm not found: tests/thirdparty, tests/mcp/test_conformance.py and the Inspector tests will skip"; \
	elif npm install --no-audit --no-fund --prefix $(NODE_SERVERS) $$(cat $(NODE_PINS)); then \
		cp $(NODE_PINS) $@; \
	else \
		echo "npm install failed: tests/thirdparty, tests/mcp/test_conformance.py and the Inspector tests will skip"; \
	fi

# nginx from Debian's packages, installed only when it is not there already (CI runs as root). Without
# it (not root, no apt-get, offline) tests/deployment skips and says why; nothing else depends on it.
$(NGINX_STAMP):
	@mkdir -p $(NODE_SERVERS)
	@if command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ]; then \
		touch $@; \
	elif [ "$$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then \
		echo "nginx not found and not root with apt-get: tests/deployment will skip"; \
	elif apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nginx; then \
		touch $@; \
	else \
		echo "apt-get install nginx failed: tests/deployment will skip"; \
	fi

# Chromium from Debian's packages, the same way: Playwright's own browser download is not used. Without it
# tests/cli/test_approvals_page.py skips and says why; nothing else depends on it.
$(CHROMIUM_STAMP):
	@mkdir -p $(NODE_SERVERS)
	@if [ -x /usr/bin/chromium ]; then \
		touch $@; \
	elif [ "$$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then \
		echo "chromium not found and not root with apt-get: the approvals page's browser test will skip"; \
	elif apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; then \
		touch $@; \
	else \
		echo "apt-get install chromium failed: the approvals page's browser test will skip"; \
	fi
