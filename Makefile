# The two set-up commands (see README): `make run` opens the studio, `make test` runs the whole suite.
# Both create their own virtual environment in .venv. `make run` opens the real model (k2-fsa/OmniVoice,
# downloaded with progress on first use; offline: `tiny` with a demo banner); MODEL=DIR|tiny picks another.

PYTHON ?= python3
VENV ?= .venv
MODEL ?=
BIN := $(VENV)/bin

.PHONY: run test check install system-deps bench clean

run: install
	$(BIN)/omnistudio $(if $(MODEL),--model $(MODEL))

test: system-deps install
	bash scripts/test.sh

# The fast tier for every change (CONTRIBUTING.md): lint, import contracts and the tests that need no
# server, Ray, Whisper, UI pilot or audio device (markers assigned in tests/conftest.py).
check: install
	bash scripts/check.sh

install: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	# compat: a plain path entry, no import hook at interpreter start (the lenient mode's finder costs
	# ~25 ms before any OmniStudio code can take Ctrl-C); the default mode if setuptools drops compat
	$(BIN)/python -m pip install --quiet -e '.[test,ray]' --config-settings editable_mode=compat 2>/dev/null \
		|| $(BIN)/python -m pip install --quiet -e '.[test,ray]'
	touch $@

system-deps:
	bash scripts/system-deps.sh

bench: install
	$(BIN)/omnistudio bench --model mid

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache
