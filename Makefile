# The two set-up commands (see README): `make run` opens the studio, `make test` runs the whole suite.
# Both create their own virtual environment in .venv.

PYTHON ?= python3
VENV ?= .venv
MODEL ?= tiny
BIN := $(VENV)/bin

.PHONY: run test install system-deps bench clean

run: install
	$(BIN)/omnistudio --model $(MODEL)

test: system-deps install
	bash scripts/test.sh

install: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $@

system-deps:
	bash scripts/system-deps.sh

bench: install
	$(BIN)/omnistudio bench --model mid

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache
