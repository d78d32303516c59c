#!/usr/bin/env bash
# Starts a private PostgreSQL (Unix socket in a temporary folder) and a sync service in front
# of it, makes alice and bob writers of the document "canvas", signs each a token, and runs
# two `strata sim` canvases that sync through the service for DURATION seconds (default 20).
# Both print their summaries; the world digests at the end are equal when they converged.
# Everything is stopped and removed at the end. `make try-sync-service` runs it.
set -euo pipefail
cd "$(dirname "$0")/.."
duration=${DURATION:-20}
work=$(mktemp -d /tmp/strata-try-XXXXXX)
chmod 755 "$work"
bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
as_postgres() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
[ "$(id -u)" = 0 ] && chown postgres "$work"
cleanup() {
    [ -n "${server:-}" ] && kill "$server" 2>/dev/null && wait "$server" 2>/dev/null || true
    as_postgres "$bin/pg_ctl" -D "$work/data" -m fast -w stop >/dev/null 2>&1 || true
    rm -rf "$work"
}
trap cleanup EXIT
as_postgres "$bin/initdb" -D "$work/data" -U strata --auth=trust -E UTF8 --no-sync >/dev/null
as_postgres "$bin/pg_ctl" -D "$work/data" -l "$work/pg.log" -w -o "-k $work -c listen_addresses=''" start >/dev/null
database="postgresql://strata@/postgres?host=$work"
server_bin=.build/release/strata-server
strata_bin=.build/release/strata
head -c 48 /dev/urandom | base64 -w0 > "$work/secret"
for who in alice bob; do
    "$server_bin" members add --database "$database" --document canvas --subject "$who" --role writer
    "$server_bin" token --hmac-secret-file "$work/secret" --subject "$who" > "$work/$who.token"
done
"$server_bin" serve --database "$database" --listen 127.0.0.1:0 --hmac-secret-file "$work/secret" --log-level warning > "$work/server.out" 2>&1 &
server=$!
for _ in $(seq 1 100); do grep -q "listening on" "$work/server.out" && break; sleep 0.1; done
url=$(grep -o "http://[0-9.:]*" "$work/server.out" | head -1)
echo "strata-server at $url (PostgreSQL at $database)"
"$strata_bin" sim --db "$work/alice.db" --sync "$url" --sync-document canvas --token-file "$work/alice.token" \
    --duration "$duration" --sync-settle 3 --entities 200 --seed 1 > "$work/alice.out" 2>&1 &
alice=$!
"$strata_bin" sim --db "$work/bob.db" --sync "$url" --sync-document canvas --token-file "$work/bob.token" \
    --duration "$duration" --sync-settle 3 --entities 200 --seed 2 > "$work/bob.out" 2>&1
wait "$alice"
for who in alice bob; do
    echo "--- $who"
    grep -E "syncing|sync   |replicated|ran for" "$work/$who.out" || true
    "$strata_bin" inspect "$work/$who.db" | grep digest | cut -c1-45
done
