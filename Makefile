# chatlog — every target sets up what it needs on a fresh machine (Debian 12, root or sudo).
SHELL := /bin/bash
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMPS := .cache/stamps
BENCHES := parse ingest rebalance sink capacity scale monitor irc serve fresh placement
JUSTLOG_BENCHES := vs-justlog read-floor fill
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
# chromium: the browser tests (tests/browser) drive Debian's build with Playwright; no browser is downloaded
APT_PACKAGES := inspircd maven openjdk-17-jre-headless chromium

.PHONY: setup test unit integration check lint typecheck demo chaos chaos-cluster cluster bench up down clean

setup: $(STAMPS)/apt $(STAMPS)/venv $(STAMPS)/maven ## venv, Python deps, Maven artifacts, Debian packages

$(STAMPS)/apt: Makefile
	@mkdir -p $(STAMPS)
	@if ! dpkg -s $(APT_PACKAGES) >/dev/null 2>&1; then \
	  $(SUDO) apt-get update -q && \
	  DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -q --no-install-recommends $(APT_PACKAGES) && \
	  ($(SUDO) service inspircd stop >/dev/null 2>&1 || true); \
	fi
	@touch $@

$(STAMPS)/venv: pyproject.toml
	@mkdir -p $(STAMPS)
	[ -x $(BIN)/python ] || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q -U pip setuptools wheel
	$(BIN)/pip install -q -e '.[dev]'
	@touch $@

# the bench extra (matplotlib, psutil): the plots and CPU times of `make bench` and `make demo`
$(STAMPS)/bench-extra: $(STAMPS)/venv pyproject.toml
	$(BIN)/pip install -q -e '.[bench]'
	@touch $@

$(STAMPS)/maven: $(STAMPS)/venv core/maven.py
	$(BIN)/chatlog stack fetch
	@touch $@

lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: setup
	$(BIN)/mypy

check: lint typecheck

# the unit tests on both cores (pytest-xdist): they share no state
UNIT_TESTS = $(BIN)/pytest tests/unit -n 2

unit: setup ## the unit tests
	$(UNIT_TESTS)

integration: setup
	$(BIN)/pytest tests/integration -m "not cluster"

test: check ## the whole suite: lint, types, unit and integration tests against the real local stack
	$(UNIT_TESTS) -m "not chaos and not cluster"
	$(BIN)/pytest tests --ignore=tests/unit -m "not chaos and not cluster" --durations=25

chaos: setup ## fault injection on the whole pipeline (restarts stack services: run it alone)
	$(BIN)/pytest tests/integration/chaos -m chaos -s --durations=0

cluster: setup ## the multi-node stack (3 Kafka, 3 Cassandra, Spark standalone): up, checked, down
	$(BIN)/pytest tests/integration/cluster -m "cluster and not chaos" -s

chaos-cluster: setup ## node faults, backfill and scale-out on the multi-node stack: up, the tests, down
	$(BIN)/chatlog stack up --nodes 3
	$(BIN)/pytest tests/integration/cluster -m "cluster and chaos" -s --durations=0; status=$$?; \
	$(BIN)/chatlog stack down --nodes 3; exit $$status

bench: setup $(STAMPS)/bench-extra ## every benchmark on the local stack; JSON and PNG under results/
	$(BIN)/chatlog stack up
	@for name in $(BENCHES); do echo "$(BIN)/chatlog bench $$name"; $(BIN)/chatlog bench $$name || exit 1; done
	@if [ -n "$(JUSTLOG)" ]; then echo "the stack again with the full JIT (a read benchmark measures Cassandra as deployed)"; \
		$(BIN)/chatlog stack down && CHATLOG_STACK_JAVA_OPTIONS= $(BIN)/chatlog stack up || exit 1; fi
	@for name in $(JUSTLOG_BENCHES); do \
		if [ -z "$(JUSTLOG)" ]; then echo "chatlog bench $$name: skipped (give a justlog binary: make bench JUSTLOG=PATH)"; \
		else echo "$(BIN)/chatlog bench $$name $(JUSTLOG)"; $(BIN)/chatlog bench $$name "$(JUSTLOG)" || exit 1; fi; \
	done
	$(BIN)/chatlog bench report

demo: setup $(STAMPS)/bench-extra ## the main job
	$(BIN)/chatlog stack up
	$(BIN)/chatlog demo

up: setup
	$(BIN)/chatlog stack up

down:
	$(BIN)/chatlog stack down

clean:
	-$(BIN)/chatlog stack down --purge
	rm -rf $(VENV) .cache
