# Strata — the two commands: `make run` and `make test`.
# System packages the build and the tests need are installed here when missing.

SWIFT ?= swift
# libupower-glib-dev + pkg-config: the power source; dbus + python3-dbusmock: its tests (a private bus).
APT_PACKAGES := libsqlite3-dev libupower-glib-dev pkg-config dbus python3-dbusmock
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
CONFIG ?= config.toml
DURATION ?= 30

.PHONY: all deps deps-bench build test run bench bench-docs bench-micro clean

all: build

# Installs whatever of APT_PACKAGES is missing (apt-get update first: a fresh machine has no lists).
deps:
	@missing=""; \
	for p in $(APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
		echo "make: installing$$missing"; \
		$(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $$missing; \
	fi

build: deps
	$(SWIFT) build

# Builds everything (the crash tests run the real `strata` binary), then runs every test.
test: deps
	$(SWIFT) build
	$(SWIFT) test

# Runs the simulation host on the default config for DURATION seconds (release build).
run: deps
	$(SWIFT) build -c release --product strata
	.build/release/strata sim --config $(CONFIG) --duration $(DURATION)

deps-bench: deps
	@dpkg -s strace >/dev/null 2>&1 || { $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq strace; }

# The fsync benchmark: every strategy side by side (release build, ~1.5 min). Writes
# bench-results/report.{md,svg,json}. Flags: make bench BENCH_ARGS="--entities 100 --seconds 4".
bench: deps
	$(SWIFT) build -c release --product strata
	.build/release/strata bench --out bench-results $(BENCH_ARGS)

# Refreshes the committed report, docs/benchmarks.md, with the strace cross-check appended.
bench-docs: deps-bench
	$(SWIFT) build -c release --product strata
	.build/release/strata bench --out docs --name benchmarks $(BENCH_ARGS)
	{ printf '\n## Cross-check: the VFS against strace\n\n`scripts/strace-crosscheck.sh` (4 simulated seconds per strategy):\n\n'; \
	  scripts/strace-crosscheck.sh; \
	  printf '\nWhere the two differ, `strace -f -y` names the files: the unix VFS fsyncs the *directory* inside the first sync of a new rollback journal or WAL file (2 here: the journal used while the schema is created, then the WAL), and the runner itself fsyncs its 3 report files (atomic writes by Foundation). In rollback-journal mode the journal is created anew for every transaction, so `naive` pays one directory sync more per commit.\n'; \
	} >> docs/benchmarks.md

# The micro-benchmarks (ordo-one/benchmark, release build): marking, hand-off, encoding,
# writer vs a raw sqlite3 loop, reload. A separate package: library users don't inherit it.
bench-micro: deps
	cd Benchmarks && $(SWIFT) package --allow-writing-to-package-directory benchmark

clean:
	rm -rf .build Benchmarks/.build bench-results
