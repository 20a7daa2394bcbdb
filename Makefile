# rocpath: the two commands a newcomer needs are `make run` and `make test`.
SHELL := /bin/bash
.DEFAULT_GOAL := help

PYTHON ?= $(shell command -v python3.11 || command -v python3)
CACHE_DIR ?= $(HOME)/.cache/rocpath
# The virtualenv is keyed by what it is built from, so a fresh clone reuses it.
VENV_KEY := $(shell cat requirements.txt requirements-dev.txt | sha256sum | cut -c1-16)-$(notdir $(PYTHON))
VENV := $(CACHE_DIR)/venv-$(VENV_KEY)
BIN := .venv/bin

.PHONY: help venv run test test-fast lint fmt check bench images clean

help:
	@echo "make run    install, migrate, start web + worker + beat (Ctrl-C stops all)"
	@echo "make test-fast  the in-process tier, between edits (~1 min; docs/development.md)"
	@echo "make test   the whole suite (lint, checks, every tier)"
	@echo "make lint   ruff check + format check"
	@echo "make bench  benchmarks of rocpath itself (bench/)"
	@echo "make images start a Docker engine if needed, build the job images (docs/containers.md)"

# The venv's path is keyed by the requirements' content, so a venv that exists and runs is
# the right one: no mtime is compared (a fresh clone's files are all new). Two clones
# building the same venv at once take turns (flock); a half-built one is built again.
venv:
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "rocpath needs Python >= 3.11")'
	@mkdir -p $(CACHE_DIR)
	@flock $(VENV).lock $(SHELL) -c '\
	  if [ "$$(cat $(VENV)/.installed 2>/dev/null)" = "$(VENV_KEY)" ] && $(VENV)/bin/python -c "" 2>/dev/null; then exit 0; fi; \
	  echo "building the virtualenv $(VENV) (once per requirements content)"; \
	  rm -rf $(VENV) && $(PYTHON) -m venv $(VENV) && \
	  $(VENV)/bin/pip install --quiet --upgrade pip && \
	  $(VENV)/bin/pip install --quiet -r requirements-dev.txt && \
	  echo "$(VENV_KEY)" >$(VENV)/.installed'
	@if [ "$$(readlink .venv 2>/dev/null)" != "$(VENV)" ]; then rm -rf .venv; ln -s $(VENV) .venv; fi

run: venv
	@ROCPATH_CACHE_DIR=$(CACHE_DIR) scripts/run.sh

lint: venv
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

fmt: venv
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

check: venv
	DJANGO_SETTINGS_MODULE=config.settings.test $(BIN)/python manage.py check
	DJANGO_SETTINGS_MODULE=config.settings.test $(BIN)/python manage.py makemigrations --check --dry-run

test-fast: venv
	@scripts/test.sh --fast

test: lint check
	@scripts/test.sh
	@scripts/test.sh --sqlite

bench: venv
	$(BIN)/python bench/dispatch.py --jobs 600
	$(BIN)/python bench/containers.py --runs 20
	$(BIN)/python bench/hipify_scan.py

images:
	scripts/start-docker.sh
	scripts/build-images.sh

clean:
	rm -rf var .venv .pytest_cache
