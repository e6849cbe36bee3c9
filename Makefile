# chatlog — every target sets up what it needs on a fresh machine (Debian 12, root or sudo).
SHELL := /bin/bash
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMPS := .cache/stamps
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

unit: setup
	$(BIN)/pytest tests/unit

integration: setup
	$(BIN)/pytest tests/integration -m "not cluster"

test: check ## the whole suite: lint, types, unit and integration tests against the real local stack
	$(BIN)/pytest tests -m "not chaos and not cluster"

chaos: setup ## fault injection on the whole pipeline (restarts stack services: run it alone)
	$(BIN)/pytest tests/integration/chaos -m chaos -s

cluster: setup ## the multi-node stack (3 Kafka, 3 Cassandra, Spark standalone): up, checked, down
	$(BIN)/pytest tests/integration/cluster -m "cluster and not chaos" -s

chaos-cluster: setup ## node faults, backfill and scale-out on the multi-node stack: up, the tests, down
	$(BIN)/chatlog stack up --nodes 3
	$(BIN)/pytest tests/integration/cluster -m "cluster and chaos" -s; status=$$?; \
	$(BIN)/chatlog stack down --nodes 3; exit $$status

bench: setup $(STAMPS)/bench-extra ## every benchmark on the local stack; JSON and PNG under results/
	$(BIN)/chatlog stack up
	$(BIN)/chatlog bench parse
	$(BIN)/chatlog bench ingest
	$(BIN)/chatlog bench rebalance
	$(BIN)/chatlog bench sink
	$(BIN)/chatlog bench capacity
	$(BIN)/chatlog bench scale
	$(BIN)/chatlog bench monitor
	$(BIN)/chatlog bench irc
	$(BIN)/chatlog bench serve
	$(BIN)/chatlog bench fresh
	$(BIN)/chatlog bench placement
	@if [ -n "$(JUSTLOG)" ]; then $(BIN)/chatlog bench vs-justlog "$(JUSTLOG)"; else echo "chatlog bench vs-justlog: skipped (give a justlog binary: make bench JUSTLOG=PATH)"; fi
	@if [ -n "$(JUSTLOG)" ]; then $(BIN)/chatlog bench fill "$(JUSTLOG)"; else echo "chatlog bench fill: skipped (give a justlog binary: make bench JUSTLOG=PATH)"; fi
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
