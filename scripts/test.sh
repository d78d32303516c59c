#!/usr/bin/env bash
# `make test` after its checks: builds and runs every test, as much at once as helps on a
# small machine. The engine's build comes first, alone (two builds at once took longer here
# than one after the other: 434 s for the engine's beside the service's, against about
# 200 s alone). Then, since most tests wait on processes, files and timers, at once:
#   - the engine's tests in three processes (suites A–R and Tool…; S–Z but Tool… and
#     Torture…; Torture…, the longest, alone);
#   - the documentation check (make docs);
#   - the sync service's package (Server/, SwiftNIO, a .build of its own) built, then its
#     tests run (they run the engine's `strata` too).
# Each part's output goes to .build/<part>.log; a part that fails has its log printed whole.
set -u
cd "$(dirname "$0")/.."
SWIFT=${SWIFT:-swift}
MAKE=${MAKE:-make}
mkdir -p .build
engine=(.build/debug/StrataPackageTests.xctest --testing-library swift-testing)

# Runs a part in the background, its output in .build/NAME.log and the second it ended in
# .build/NAME.end (SECONDS counts on in a subshell).
part() {
    local name=$1
    shift
    ( "$@" > ".build/$name.log" 2>&1; status=$?; echo "$SECONDS" > ".build/$name.end"; exit $status ) &
}

"$SWIFT" build --build-tests || exit 1
echo "make test: the engine built in $SECONDS s"

part server-build "$SWIFT" build --package-path Server --build-tests
server_build=$!

part engine-tests-1 "${engine[@]}" --filter 'StrataTests\.([A-R]|Tool)'
first=$!
part engine-tests-2 "${engine[@]}" --filter 'StrataTests\.[S-Z]' --skip 'StrataTests\.(Tool|Torture)'
second=$!
part engine-tests-3 "${engine[@]}" --filter 'StrataTests\.Torture'
third=$!
part docs "$MAKE" --no-print-directory docs
docs=$!

wait "$server_build"
built=$?
echo "make test: the service built at $(cat .build/server-build.end) s"
if [ $built -eq 0 ]; then
    part server-tests "$SWIFT" test --package-path Server --skip-build
    server=$!
else
    cp .build/server-build.log .build/server-tests.log
fi

failed=0
for part in engine-tests-1:$first engine-tests-2:$second engine-tests-3:$third docs:$docs server-tests:${server:-}; do
    name=${part%%:*}
    pid=${part#*:}
    status=1
    if [ -n "$pid" ]; then wait "$pid"; status=$?; fi
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
