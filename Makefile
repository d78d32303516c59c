# Strata — the two commands: `make run` and `make test`.
# System packages the build and the tests need are installed here when missing.

SWIFT ?= swift
# libupower-glib-dev + pkg-config: the power source; dbus + python3-dbusmock: its tests (a private bus);
# postgresql: the sync tests start a private server (initdb + pg_ctl, a Unix socket);
# iproute2: the sync checker's network namespaces (ip netns); libssl-dev: the sync service's
# TLS and token signatures (OpenSSL), openssl: its tests make keys and certificates and speak
# TLS to it; ca-certificates: the system's CA bundle, which its tests' devices trust it through.
APT_PACKAGES := libsqlite3-dev libupower-glib-dev pkg-config dbus python3-dbusmock postgresql libpq-dev iproute2 libssl-dev openssl ca-certificates
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
CONFIG ?= config.toml
DURATION ?= 30

.PHONY: try-sync-service torture-sync-service server all deps deps-bench build test example docs run bench bench-docs bench-sweep bench-p99 bench-micro bench-sync fuzz-sync cuts torture torture-sync clean

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

# Refuses a trap on read data first (scripts/check-untrusted-reads.py: no GRDB row subscript,
# try!, as! or forced unwrap in the engine, the adapters, the host or the sync service);
# then scripts/test.sh builds everything with the tests (the crash tests run the real
# `strata` binary, ExampleTests the embedding example's program) and runs every test, the
# documentation check and the sync service's tests, as much at once as helps: see the script.
test: deps
	python3 scripts/check-untrusted-reads.py
	python3 scripts/check-house-rules.py
	SWIFT=$(SWIFT) MAKE=$(MAKE) scripts/test.sh

# The embedding example as a package of its own, as a user's package would build it.
example: deps
	$(SWIFT) build --package-path Examples/GameHost

# The library's documentation (DocC: Sources/Strata/Strata.docc and the symbols' comments);
# a broken symbol link fails it. Writes .build/Strata.doccarchive. The symbol graphs come from
# one `swift package dump-symbol-graph` (public symbols), and the toolchain's `docc` converts
# the catalog with the library's graph, as `swift package generate-documentation --target
# Strata` (the DocC plugin) does, without building the plugin's snippet tool first (72 s of a
# fresh clone's `make test`). Then the public symbols of the library and its adapters are
# checked against docs/public-api.txt: a symbol that became public by accident fails it
# (scripts/check-public-api.py).
# The toolchain's docc: beside the swift that builds (found through its links), else on PATH.
DOCC ?= $(shell d=$$(dirname "$$(readlink -f "$$(command -v $(SWIFT))")"); if [ -x "$$d/docc" ]; then echo "$$d/docc"; else echo docc; fi)
docs: deps
	$(SWIFT) package dump-symbol-graph --minimum-access-level public > /dev/null
	rm -rf .build/docs-symbols && mkdir -p .build/docs-symbols
	cp .build/*/symbolgraph/Strata.symbols.json .build/docs-symbols/
	for graph in .build/*/symbolgraph/Strata@*.symbols.json; do [ ! -e "$$graph" ] || cp "$$graph" .build/docs-symbols/; done
	$(DOCC) convert Sources/Strata/Strata.docc --warnings-as-errors --fallback-display-name Strata \
		--fallback-bundle-identifier Strata --additional-symbol-graph-dir .build/docs-symbols \
		--output-path .build/Strata.doccarchive
	python3 scripts/check-public-api.py

# Runs the simulation host on the default config for DURATION seconds. A debug build: what the
# run prints (sync requests, bytes, pages; ticks at 60 Hz) is the same as a release build's,
# and the release build alone took over 4 minutes on a fresh clone here (timed figures come
# from release builds: see the bench targets).
run: deps
	$(SWIFT) build --product strata
	.build/debug/strata sim --config $(CONFIG) --duration $(DURATION)

# The sync service, release build (its own product: the one that links SwiftNIO).
server: deps
	$(SWIFT) build -c release --product strata-server

# A sync service on a private PostgreSQL, and two `strata sim` canvases syncing through it
# for DURATION seconds (scripts/try-sync-service.sh; everything removed at the end).
try-sync-service: server
	$(SWIFT) build -c release --product strata
	DURATION=$(DURATION) scripts/try-sync-service.sh

deps-bench: deps
	@dpkg -s strace >/dev/null 2>&1 || { $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq strace; }

# The fsync benchmark: every strategy side by side (release build, ~1.5 min). Writes
# bench-results/report.{md,svg,json}. Flags: make bench BENCH_ARGS="--entities 100 --seconds 4".
bench: deps
	$(SWIFT) build -c release --product strata
	.build/release/strata bench --out bench-results $(BENCH_ARGS)

# Storage cost across world sizes: N = 1k … 1M entities, 1k moving, 60 simulated s per
# strategy; then the canvas (strata sim's document: every kind of data) at 1k, 10k and 100k
# shapes beside snapshots of it, with a busy and a battery run (release build, ~25 min).
# Writes docs/sweep.{md,svg,json} and docs/canvas.{md,svg,json}, which bench-docs appends to
# docs/benchmarks.md. Flags: make bench-sweep SWEEP_ARGS="--sweep-entities 1000,10000 --seconds 20"
# CANVAS_ARGS="--sweep-entities 1000 --seconds 20".
SWEEP_ARGS ?= --sweep-entities 1000,10000,100000,1000000 --moving 1000 --seconds 60
CANVAS_ARGS ?= --sweep-entities 1000,10000,100000 --seconds 60
bench-sweep: deps
	$(SWIFT) build -c release --product strata
	.build/release/strata bench $(SWEEP_ARGS) --out docs --name sweep
	.build/release/strata bench --workload canvas $(CANVAS_ARGS) --out docs --name canvas

# Tick p99 side by side, run after run: the baseline, Strata and the twin (the baseline's
# work on a second world: the harness's own noise) in one tick loop, 10 runs of 12.5 s at
# N = 1k, 10k, 100k with 1k moving (release build, ~8 min). Writes docs/p99.{md,json},
# which bench-docs appends to docs/benchmarks.md. Flags: make bench-p99 P99_ARGS="--repeat 3 --entities 1000".
P99_ARGS ?= --repeat 10 --sweep-entities 1000,10000,100000 --moving 1000 --seconds 12.5
bench-p99: deps
	$(SWIFT) build -c release --product strata
	.build/release/strata bench $(P99_ARGS) --out docs --name p99

# Refreshes the committed report, docs/benchmarks.md, with the strace cross-check, the
# last sweep (docs/sweep.md, from make bench-sweep) and the last p99 study (docs/p99.md,
# from make bench-p99) appended.
bench-docs: deps-bench
	$(SWIFT) build -c release --product strata
	.build/release/strata bench --out docs --name benchmarks $(BENCH_ARGS)
	{ printf '\n## Cross-check: the VFS against strace\n\n`scripts/strace-crosscheck.sh` (4 simulated seconds per strategy):\n\n'; \
	  scripts/strace-crosscheck.sh; \
	  printf '\nWhere the two differ, `strace -f -y` names the files: the unix VFS fsyncs the *directory* inside the first sync of a new rollback journal or WAL file (2 here: the journal used while the schema is created, then the WAL), and the runner itself fsyncs its 3 report files (atomic writes by Foundation). In rollback-journal mode the journal is created anew for every transaction, so `naive` pays one directory sync more per commit.\n'; \
	  if [ -f docs/sweep.md ]; then printf '\n'; sed -e 's/^# /## /' -e 's/^## N = /### N = /' -e 's/^## What it must show/### What it must show (across world sizes)/' -e 's/^## The strategies/### The strategies (across world sizes)/' docs/sweep.md; fi; \
	  if [ -f docs/canvas.md ]; then printf '\n'; sed -e 's/^# /## /' -e 's/^## \([0-9]* shapes\)/### \1/' -e 's/^## What it must show/### What it must show (the canvas)/' -e 's/^## The strategies/### The strategies (the canvas)/' docs/canvas.md; fi; \
	  if [ -f docs/p99.md ]; then printf '\n'; sed -e 's/^# /## /' -e 's/^## N = /### N = /' -e 's/^## What it must show/### What it must show (tick p99, run after run)/' docs/p99.md; fi; \
	} >> docs/benchmarks.md

# The micro-benchmarks (ordo-one/benchmark, release build): marking, hand-off, encoding,
# writer vs a raw sqlite3 loop, reload. A separate package: library users don't inherit it.
bench-micro: deps
	cd Benchmarks && $(SWIFT) package --allow-writing-to-package-directory benchmark

# The sync against a private PostgreSQL server (release build, ~2.5 min): push throughput,
# a 100k-operation document joining, commit→applied latency with and without notifications,
# an idle device's requests a minute, the outbox's memory and first-batch load, online→first acknowledged push, duplicates
# and losses. Flags: make bench-sync SYNC_BENCH_ARGS="--operations 100000".
SYNC_BENCH_DIR ?= /tmp/strata-bench-pg
bench-sync: deps
	$(SWIFT) build -c release --product strata
	@url=$$(scripts/private-postgres.sh start $(SYNC_BENCH_DIR)); \
	.build/release/strata bench-sync --server "$$url" $(SYNC_BENCH_ARGS); status=$$?; \
	scripts/private-postgres.sh stop $(SYNC_BENCH_DIR); rm -rf $(SYNC_BENCH_DIR); exit $$status

# The durability contract under faults (release build, ~30 min; docs/durability.md): 500
# power cuts that drop unsynced writes, 500 that tear them, 1000 SIGKILLs of `strata sim`,
# every I/O call site the workload reaches failed with EIO and with ENOSPC, once and from
# then on, every read failed with SQLITE_CORRUPT (the file is replaced while running), and 100
# runs on a real disk that fills (a tmpfs, as root; ~8 min): half freed mid-run, half kept full
# through the shutdown; the page sweep: each page of a 2000-shape canvas damaged in turn and
# started on twice (~4 min); and the row-type sweep: NULL, an integer, a real, a text, a blob,
# an empty and a 1 MB value planted in each column of each table in turn, then inspect, doctor,
# oplog, history, backup, a start, a start syncing to a private server and maintain on it, none
# of which may trap or hang. Exits non-zero on any failure, keeping the files in TORTURE_DIR.
# The convergence fuzzer of replicated components, long: 20 seeds of 1,000 rounds (`make test`
# runs 6 of 150). One seed again: make fuzz-sync FUZZ_ENV="STRATA_FUZZ_SEED=20269045".
fuzz-sync: deps
	STRATA_FUZZ_ROUNDS=1000 STRATA_FUZZ_SEEDS=20 STRATA_FUZZ_VERBOSE=1 $(FUZZ_ENV) $(SWIFT) test --filter ConvergenceFuzzTests

# The cut-short sweep, long: a salvage (maintain --repair), a backup, a restore, maintenance and
# a document switch, each killed (SIGKILL, SIGTERM) at CUTS evenly spaced moments of its run,
# then started on (`make test` runs 16 and 10). Debug build, ~3 min at 100.
CUTS ?= 100
cuts: deps
	STRATA_CUTS=$(CUTS) STRATA_REPAIR_CUTS=$(CUTS) $(SWIFT) test --filter "CutShortTests|aRepairKilledAtAnyMomentEndsWhole"

TORTURE_DIR ?= torture-results
TORTURE_PG_DIR ?= /tmp/strata-torture-pg
torture: deps
	$(SWIFT) build -c release --product strata
	.build/release/strata torture --mode drop,torn --cycles 500 --dir $(TORTURE_DIR) $(TORTURE_ARGS)
	.build/release/strata torture --mode sigkill --cycles 1000 --dir $(TORTURE_DIR) $(TORTURE_ARGS)
	.build/release/strata torture --mode eio,enospc,corrupt --dir $(TORTURE_DIR) $(TORTURE_ARGS)
	.build/release/strata torture --mode diskfull --cycles 100 --dir $(TORTURE_DIR) $(TORTURE_ARGS)
	.build/release/strata torture --mode pages --dir $(TORTURE_DIR) $(TORTURE_ARGS)
	@url=$$(scripts/private-postgres.sh start $(TORTURE_PG_DIR)); \
	.build/release/strata torture --mode rowtypes --dir $(TORTURE_DIR) --sync-server "$$url" $(TORTURE_ARGS); status=$$?; \
	scripts/private-postgres.sh stop $(TORTURE_PG_DIR); rm -rf $(TORTURE_PG_DIR); exit $$status

# Replication checked from outside (release build, root; ~15 s a run): SYNC_RUNS runs of 3-5
# `strata sim --sync` devices, each in a network namespace of its own, through a private
# PostgreSQL server, with partitions, kills, power cuts, the server stopped hard, clock jumps
# and late joiners; after each, every device must hold the server's operations once, the
# replicated digest the checker works out from them, and every operation logged before the
# critical delay (docs/durability.md). `make test` runs 1. One run again:
# make torture-sync SYNC_RUNS=1 SYNC_SEED=<its seed>.
SYNC_RUNS ?= 500
SYNC_SEED ?= 1
torture-sync: deps
	$(SWIFT) build -c release --product strata
	.build/release/strata torture --mode sync --cycles $(SYNC_RUNS) --seed $(SYNC_SEED) --dir $(TORTURE_DIR) $(TORTURE_ARGS)

# The same through the sync service: the devices sync over HTTPS to a strata-server (a token
# each) in front of that PostgreSQL, which is SIGKILLed and restarted among the faults, and
# every operation must have been pushed by its own device's subject. First the service's
# SyncCheckerTests (one run, and one sabotaged that must fail; not in `make test`: see there).
torture-sync-service: deps server
	$(SWIFT) build --build-tests
	STRATA_CHECKER_THROUGH_SERVICE=1 $(SWIFT) test --skip-build --filter 'StrataServerTests\.SyncCheckerTests'
	$(SWIFT) build -c release --product strata
	.build/release/strata torture --mode sync --cycles $(SYNC_RUNS) --seed $(SYNC_SEED) --dir $(TORTURE_DIR) \
		--sync-service .build/release/strata-server $(TORTURE_ARGS)

clean:
	rm -rf .build Benchmarks/.build bench-results torture-results
