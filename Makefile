# commsched — the front door. `make run` and `make test` work on a fresh
# Debian machine: they install what is missing, configure, build and run.
# Everything else is plain CMake (see CMakePresets.json).

MAKEFLAGS += --no-print-directory
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
RELEASE := build/release
DEBUG := build/debug
SANITIZE_PRESETS := clang-asan gcc-asan
FUZZ := build/fuzz
VENV := build/venv
JAX_VENV := build/jax-venv
HTA_VENV := build/hta-venv
FUZZ_SECONDS ?= 60
EXAMPLE := graphs/examples/fsdp_2layer.json
PREFIX ?= /usr/local
DESTDIR ?=

.PHONY: all deps venv jax-venv release debug run test sanitize fuzz bench install clean

all: release

deps:
	@sh tools/install-deps.sh

release: deps
	@cmake --preset release >/dev/null
	@cmake --build $(RELEASE) -j $(JOBS)

# With the virtual environments present (make venv, make jax-venv), the
# python tier also runs the plugin under a real torch.compile and HTA's
# overlap on real traces, and the import tier remakes graphs/xla's HLO
# dumps with JAX, each with its interpreter.
debug: deps
	@cmake --preset debug $$(test -x $(VENV)/bin/python && \
	  echo -DCOMMSCHED_TORCH_PYTHON=$(CURDIR)/$(VENV)/bin/python) \
	  $$(test -x $(JAX_VENV)/bin/python && \
	  echo -DCOMMSCHED_JAX_PYTHON=$(CURDIR)/$(JAX_VENV)/bin/python) \
	  $$(test -x $(HTA_VENV)/bin/python && \
	  echo -DCOMMSCHED_HTA_PYTHON=$(CURDIR)/$(HTA_VENV)/bin/python) >/dev/null
	@cmake --build $(DEBUG) -j $(JOBS)

# torch==2.13.0 (pinned) and the binding in build/venv (tools/make-venv.sh);
# HolisticTraceAnalysis (pinned, tests/python/hta-requirements.txt) in
# build/hta-venv (tools/make-hta-venv.sh) for the python/hta test.
venv: deps
	@sh tools/make-venv.sh $(VENV)
	@sh tools/make-hta-venv.sh $(HTA_VENV)

# jax[cpu]==0.10.2 (pinned) in build/jax-venv (tools/make-jax-venv.sh).
jax-venv: deps
	@sh tools/make-jax-venv.sh $(JAX_VENV)

# Optimizes the bundled example, prints the before/after report and writes
# the HTML report (timelines, memory, per-collective table) next to it.
run: release
	@$(RELEASE)/tools/commsched optimize $(EXAMPLE) -o $(RELEASE)/example.opt.json --report --html $(RELEASE)/example.report.html
	@echo "optimized schedule written to $(RELEASE)/example.opt.json"
	@echo "HTML report written to $(CURDIR)/$(RELEASE)/example.report.html (open it in a browser)"

# Makes the torch and JAX environments, builds with asserts and runs every test
# (ctest), then the fast tiers again under ASan + UBSan built with clang
# and with gcc (`make sanitize`). Installs Debian's chromium first: the
# HTML report's browser test (report/browser) runs in it.
test:
	@sh tools/install-deps.sh chromium
	@$(MAKE) venv
	@$(MAKE) jax-venv
	@$(MAKE) debug
	@cd $(DEBUG) && ctest --output-on-failure -j $(JOBS)
	@$(MAKE) sanitize

# The unit, invalid-input and fuzz-replay tiers under AddressSanitizer and
# UndefinedBehaviorSanitizer, compiled once with clang (the clang build CI
# runs: .ci/run is `make test`) and once with gcc (build/<preset>): each
# compiler's UBSan checks something the other does not (gcc's flags
# qsort(NULL, 0, ...)). Any report fails the test.
sanitize: deps
	@for preset in $(SANITIZE_PRESETS); do \
	  cmake --preset $$preset >/dev/null && \
	  cmake --build build/$$preset -j $(JOBS) && \
	  (cd build/$$preset && export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 && \
	   ctest --output-on-failure -j $(JOBS) -L 'unit|fuzz' && \
	   ctest --output-on-failure -j $(JOBS) -R '^(graphs|import)/invalid/') \
	  || exit 1; \
	done

# Runs each libFuzzer harness (tests/fuzz) for FUZZ_SECONDS, one after the
# other on one core, from the seed corpus; prints executions and findings.
# A crash input lands in build/fuzz/artifacts/<harness>/: copy it to
# tests/fuzz/regressions/<harness>/ with its fix, and `make test` replays it.
fuzz: deps
	@cmake --preset fuzz >/dev/null
	@cmake --build $(FUZZ) -j $(JOBS)
	@sh tests/fuzz/run.sh $(FUZZ) $(FUZZ_SECONDS)

# Speed and quality measurements; never part of `make test`. The torch
# environment (make venv) is for the plugin-at-scale benchmark.
bench: release venv
	@sh bench/run.sh $(RELEASE)

# Headers, libraries, the CLI, commsched.pc and the CMake package
# (docs/API.md). DESTDIR stages the tree for packaging:
#   make install PREFIX=/usr DESTDIR=/tmp/pkgroot
install: release
	@DESTDIR="$(DESTDIR)" cmake --install $(RELEASE) --prefix $(PREFIX)

clean:
	rm -rf build
