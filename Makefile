# commsched — the front door. `make run` and `make test` work on a fresh
# Debian machine: they install what is missing, configure, build and run.
# Everything else is plain CMake (see CMakePresets.json).

MAKEFLAGS += --no-print-directory
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
RELEASE := build/release
DEBUG := build/debug
EXAMPLE := graphs/examples/fsdp_2layer.json
PREFIX ?= /usr/local

.PHONY: all deps release debug run test bench install clean

all: release

deps:
	@sh tools/install-deps.sh

release: deps
	@cmake --preset release >/dev/null
	@cmake --build $(RELEASE) -j $(JOBS)

debug: deps
	@cmake --preset debug >/dev/null
	@cmake --build $(DEBUG) -j $(JOBS)

# Optimizes the bundled example and prints the before/after report.
run: release
	@$(RELEASE)/tools/commsched optimize $(EXAMPLE) -o $(RELEASE)/example.opt.json --report
	@echo "optimized schedule written to $(RELEASE)/example.opt.json"

# Builds with asserts and runs every test (ctest).
test: debug
	@cd $(DEBUG) && ctest --output-on-failure -j $(JOBS)

# Speed and quality measurements; never part of `make test`.
bench: release
	@sh bench/run.sh $(RELEASE)

install: release
	@cmake --install $(RELEASE) --prefix $(PREFIX)

clean:
	rm -rf build
