# Gatehouse: `make run` starts the console on the embedded default; `make test` passes every test.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
HOST ?= 127.0.0.1
PORT ?= 8000
# Agent CLIs, pinned: the versions the protocol notes were captured from.
CLAUDE_CODE_VERSION := 2.1.197
CODEX_VERSION := 0.171.0
OPENCODE_VERSION := 1.18.33
CLAUDE_CODE_ACP_VERSION := 0.16.2
GEMINI_CLI_VERSION := 0.61.0
AGENTS := .agents
AGENTS_MARKER := $(AGENTS)/.installed-$(CLAUDE_CODE_VERSION)-$(CODEX_VERSION)-$(OPENCODE_VERSION)-$(CLAUDE_CODE_ACP_VERSION)-$(GEMINI_CLI_VERSION)
# axe-core, pinned, for the console's accessibility checks in the browser tests (the console
# itself has no front-end build: htmx and its ws extension come from django-htmx).
AXE_CORE_VERSION := 4.14.1
AXE := node_modules/.installed-axe-core-$(AXE_CORE_VERSION)

.PHONY: run run-scaled stop-scaled test test-core lint setup agents axe chromium sandbox bench check clean mutation

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip
	$(PIP) install --quiet -e '.[test]'
	touch $@

setup: $(VENV)/.installed

run: setup sandbox
	$(PY) manage.py migrate --noinput -v 0
	$(PY) manage.py serve --host $(HOST) --port $(PORT)

# The scaled shape on this machine: 2 Daphne web processes (PORT, PORT+1) and 2 workers
# against DATABASE_URL / REDIS_URL (default: the PostgreSQL and Redis on 127.0.0.1).
run-scaled: setup
	$(PY) scripts/scaled.py start --port $(PORT)

stop-scaled:
	$(PY) scripts/scaled.py stop

$(AGENTS_MARKER):
	mkdir -p $(AGENTS)
	cd $(AGENTS) && npm install --no-audit --no-fund --loglevel=error \
		@anthropic-ai/claude-code@$(CLAUDE_CODE_VERSION) @openai/codex@$(CODEX_VERSION) \
		opencode-ai@$(OPENCODE_VERSION) @zed-industries/claude-code-acp@$(CLAUDE_CODE_ACP_VERSION) \
		@google/gemini-cli@$(GEMINI_CLI_VERSION)
	touch $@

agents: $(AGENTS_MARKER)

$(AXE):
	npm install --no-audit --no-fund --no-save --no-package-lock --loglevel=error --prefix . axe-core@$(AXE_CORE_VERSION)
	touch $@

axe: $(AXE)

# Debian's Chromium for the console's browser tests (Playwright drives /usr/bin/chromium).
chromium:
	@if [ ! -x /usr/bin/chromium ]; then \
		if [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq chromium >/dev/null; \
		else echo "install Debian's chromium (apt-get install chromium) for the browser tests"; fi; \
	fi

# Debian's bubblewrap and socat: the OS sandbox floor every run's processes start in
# (docs/sandbox.md). Without them runs are refused (sandbox_unavailable), unless
# GATEHOUSE_SANDBOX=off.
sandbox:
	@if ! command -v bwrap >/dev/null 2>&1 || ! command -v socat >/dev/null 2>&1; then \
		if [ "$$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap socat >/dev/null; \
		else echo "install Debian's bubblewrap and socat (apt-get install bubblewrap socat) for the sandbox floor"; fi; \
	fi

lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy approvals runs drivers project integrations infra repos
	$(VENV)/bin/lint-imports --no-cache

test: setup agents axe chromium sandbox lint
	$(PY) -m pytest $(PYTEST_ARGS)

# The inner loop, under a minute (docs/testing.md): the pure policy core without its long
# property runs, and the services' fast tests (the step lifecycle, the hand-out, the run
# policy ceiling, API validation, idempotency). Not part of `make test`, which runs all of it.
CORE_TESTS := tests/approvals/policy tests/approvals/gate/test_lifecycle.py tests/approvals/gate/test_resolution.py \
	tests/approvals/gate/test_policy_snapshot.py tests/approvals/test_answers.py tests/approvals/test_grant_settles.py \
	tests/approvals/test_policy_versions.py tests/runs/test_ceiling.py tests/runs/test_api_validation.py \
	tests/runs/test_policy_choice.py tests/integrations/test_api_hardening.py
test-core: setup
	$(PY) -m pytest -q -m "not slow and not agents and not browser" $(CORE_TESTS) $(PYTEST_ARGS)

bench: setup
	$(PY) bench/policy_eval.py
	$(PY) bench/gate_throughput.py
	$(PY) bench/inbox.py
	$(PY) bench/metrics_scrape.py
	$(PY) bench/hook_gateway.py
	$(PY) bench/decision_latency.py
	$(PY) bench/gate_load.py
	$(PY) bench/many_waiting.py 200
	$(PY) bench/many_waiting.py 1000 --asleep
	$(PY) bench/friction.py
	$(PY) bench/policy_accuracy.py
	$(PY) bench/egress.py
	$(PY) bench/hibernation.py
	$(PY) bench/cli_overhead.py
	$(PY) bench/sandbox.py

# Mutation testing (docs/benchmarks.md, "Mutation testing"; not part of `make test`): mutmut
# ([tool.mutmut] in pyproject.toml) mutates the functions where a change would change a
# decision (allow/ask/deny/abort) or a guardrail reaching the agent CLI, and runs the fast
# tests that reach each one. The whole scope is ~1,400 mutants, 2-6 a minute with one child
# (`MUTATION_CHILDREN`): hours, so `make mutation MUTANTS='approvals.policy.evaluate.*'` runs part;
# `.venv/bin/mutmut results` lists the survivors, `.venv/bin/mutmut show <name>` one of them.
# One child: two at once share mutants/'s var directory and test database, and killed mutants
# that survive alone (measured: three of decide_request's).
MUTATION_CHILDREN ?= 1
MUTANTS ?= 'approvals.policy.decide.*' 'approvals.policy.evaluate.*' 'approvals.policy.decisions.*' \
	'approvals.policy.verdicts.*' 'approvals.gate.handout.*' 'approvals.gate.lifecycle.*' \
	'drivers.codex.config.x_render_config__*' 'drivers.codex.driver.x*_handshake__*' 'drivers.codex.driver.x_thread_params__*' \
	'drivers.codex.translate.x_approval_reply__*' 'drivers.codex.translate.x_combine_replies__*' \
	'drivers.claude_code.isolation.x_argv__*' 'drivers.claude_code.mapping.x_permission_reply__*' \
	'drivers.claude_code.driver.x*_permission_mode__*' 'drivers.claude_code.driver.x*_environment__*' \
	'drivers.claude_code.driver.x*_start__*' 'drivers.claude_code.driver.x*_cli_argv__*' \
	'drivers.claude_code.driver.x*_local_answer__*'
mutation: setup
	$(PIP) install --quiet -e '.[test,mutation]'
	$(VENV)/bin/mutmut run --max-children $(MUTATION_CHILDREN) $(MUTANTS)
	$(VENV)/bin/mutmut export-cicd-stats

check: setup
	GATEHOUSE_PRODUCTION=1 GATEHOUSE_SECRET_KEY=check-only-$$(date +%s)-not-a-real-key-0123456789abcdefghijklmnop \
		GATEHOUSE_ALLOWED_HOSTS=gatehouse.example $(PY) manage.py check --deploy --fail-level WARNING

clean:
	rm -rf $(VENV) var
