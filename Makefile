# The two commands of the README's Quickstart, and a few helpers.
.PHONY: setup verifiers run test floors bench lint

setup:
	@bash scripts/setup.sh

run:
	@bash scripts/setup.sh embedded terminal
	.venv/bin/lwm demo

verifiers:
	@bash scripts/setup_verifiers.sh

test: setup verifiers
	LWM_STRICT_SKIPS=1 .venv/bin/python -m pytest -q

floors: setup
	.venv/bin/python scripts/check_floors.py

bench: setup
	.venv/bin/python benchmarks/bench_step.py

lint: setup
	.venv/bin/ruff check src tests benchmarks scripts integrations
