#!/usr/bin/env bash
# `make test` after its checks: builds and runs every test, as much at once as helps on a
# small machine. One build first: the engine, `strata`, the sync service and every test
# target (one package graph: the dependencies the engine and the service share are built
# once). Then, since most tests wait on processes, files and timers, at once:
#   - the engine's tests in four processes (suites A–D; E–R and Tool…; S–Z but Tool…
#     and Torture…; Torture…, the longest, alone): a test process keeps as many tests
#     running as there are cores, and most of these wait;
#   - the sync service's tests (StrataServerTests) in a fourth;
#   - the documentation check (make docs).
# Each part's output goes to .build/<part>.log; a part that fails has its log printed whole.
# A warning in the project's own code fails the build step.
set -u
cd "$(dirname "$0")/.."
SWIFT=${SWIFT:-swift}
MAKE=${MAKE:-make}
mkdir -p .build
tests=(.build/debug/StrataPackageTests.xctest --testing-library swift-testing)

# Runs a part in the background, its output in .build/NAME.log and the second it ended in
# .build/NAME.end (SECONDS counts on in a subshell).
part() {
    local name=$1
    shift
    ( "$@" > ".build/$name.log" 2>&1; status=$?; echo "$SECONDS" > ".build/$name.end"; exit $status ) &
}

"$SWIFT" build --build-tests 2>&1 | tee .build/build.log
[ "${PIPESTATUS[0]}" -eq 0 ] || exit 1
echo "make test: built in $SECONDS s"
# No warning in the project's own code (what this build compiled: all of it on a fresh clone).
warnings=$(grep -aE "(Sources|Tests|Examples)/[^:]+\.swift:[0-9]+:[0-9]+: warning:" .build/build.log | grep -v "/\.build/" | sort -u)
if [ -n "$warnings" ]; then
    echo "$warnings"
    echo "make test: $(echo "$warnings" | wc -l) warning(s) in the project's own code"
    exit 1
fi

part engine-tests-1 "${tests[@]}" --filter 'StrataTests\.[A-D]'
first=$!
part engine-tests-4 "${tests[@]}" --filter 'StrataTests\.([E-R]|Tool)'
fourth=$!
part engine-tests-2 "${tests[@]}" --filter 'StrataTests\.[S-Z]' --skip 'StrataTests\.(Tool|Torture|SyncSim)'
second=$!
part engine-tests-3 "${tests[@]}" --filter 'StrataTests\.(Torture|SyncSim)'
third=$!
part server-tests "${tests[@]}" --filter 'StrataServerTests\.'
server=$!
part docs "$MAKE" --no-print-directory docs
docs=$!

failed=0
for part in engine-tests-1:$first engine-tests-4:$fourth engine-tests-2:$second engine-tests-3:$third server-tests:$server docs:$docs; do
    name=${part%%:*}
    pid=${part#*:}
    wait "$pid"
    status=$?
    if [ $status -ne 0 ]; then
        cat ".build/$name.log"
        echo "make test: $name failed (status $status)"
        failed=1
    elif [ "$name" = docs ]; then
        tail -n 3 .build/docs.log
    else
        echo "$(grep -a "Test run with" ".build/$name.log") (ended at $(cat ".build/$name.end") s)"
    fi
done
exit $failed
