#!/bin/sh
# A private PostgreSQL server for `make bench-sync` (the tests start their own from Swift):
# initdb + pg_ctl in FOLDER, a Unix socket there, no TCP port, trust authentication, user
# `strata`. As root, the server runs as the `postgres` user (PostgreSQL refuses root).
#   scripts/private-postgres.sh start FOLDER   # prints the server's URL
#   scripts/private-postgres.sh stop FOLDER
set -eu
action=$1
folder=$2
bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
as_owner() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
case "$action" in
start)
    mkdir -p "$folder"
    chmod 755 "$folder"
    [ "$(id -u)" = 0 ] && chown postgres:postgres "$folder"
    [ -d "$folder/data" ] || as_owner "$bin/initdb" -D "$folder/data" -U strata --auth=trust -E UTF8 --no-sync >/dev/null
    as_owner "$bin/pg_ctl" -D "$folder/data" -l "$folder/log" -w -o "-k $folder -c listen_addresses='' -c max_connections=40" start >/dev/null
    echo "postgresql://strata@/postgres?host=$folder"
    ;;
stop)
    as_owner "$bin/pg_ctl" -D "$folder/data" -m fast -w stop >/dev/null
    ;;
*)
    echo "usage: $0 start|stop FOLDER" >&2
    exit 64
    ;;
esac
