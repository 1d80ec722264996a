#!/usr/bin/env bash
# A throwaway PostgreSQL cluster on loopback for the journal's tests and the fleet soak.
#
#   scripts/postgres-throwaway.sh start   # installs PostgreSQL from the distribution when it is
#                                         # missing, starts a cluster, prints its URL
#   scripts/postgres-throwaway.sh stop    # stops it and deletes its files
#
# The cluster lives in $WHISH_PG_DIR (default /tmp/whish-pg), listens on 127.0.0.1:$WHISH_PG_PORT
# (default 55432) only, trusts local connections (it holds nothing but test data) and runs as a
# non-root user (PostgreSQL refuses root): the current user, or `postgres` when run as root.
set -euo pipefail

dir="${WHISH_PG_DIR:-/tmp/whish-pg}"
port="${WHISH_PG_PORT:-55432}"
url="postgres://whish@127.0.0.1:${port}/postgres"

bindir() {
    if command -v pg_ctl >/dev/null 2>&1 && command -v initdb >/dev/null 2>&1; then
        dirname "$(command -v pg_ctl)"
        return
    fi
    local found
    found="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1 || true)"
    [ -n "$found" ] && echo "$found"
}

as_owner() {
    if [ "$(id -u)" = 0 ]; then
        runuser -u postgres -- "$@"
    else
        "$@"
    fi
}

case "${1:-}" in
start)
    bin="$(bindir || true)"
    if [ -z "$bin" ]; then
        echo "postgres-throwaway: PostgreSQL is not installed; installing it from the distribution" >&2
        if [ "$(id -u)" != 0 ]; then
            echo "postgres-throwaway: installing needs root (apt-get install postgresql)" >&2
            exit 1
        fi
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq
        apt-get install -y -qq postgresql >/dev/null
        bin="$(bindir)"
    fi
    if [ "$(id -u)" = 0 ] && ! id postgres >/dev/null 2>&1; then
        useradd --system --home-dir /var/lib/postgresql --shell /bin/sh postgres
    fi
    if [ -f "$dir/data/postmaster.pid" ]; then
        as_owner "$bin/pg_ctl" -D "$dir/data" -m immediate stop >/dev/null 2>&1 || true
    fi
    rm -rf "$dir"
    mkdir -p "$dir"
    [ "$(id -u)" = 0 ] && chown postgres "$dir"
    as_owner "$bin/initdb" -D "$dir/data" -U whish -A trust -E UTF8 --no-instructions >/dev/null
    as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/log" -w -t 60 \
        -o "-c listen_addresses=127.0.0.1 -p $port -k $dir -c max_connections=200 -c fsync=off \
        -c wal_level=minimal -c max_wal_senders=0 -c max_wal_size=64MB -c min_wal_size=32MB" start >/dev/null
    echo "$url"
    ;;
stop)
    bin="$(bindir || true)"
    if [ -n "$bin" ] && [ -f "$dir/data/postmaster.pid" ]; then
        as_owner "$bin/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null || true
    fi
    rm -rf "$dir"
    ;;
*)
    echo "usage: $0 start|stop" >&2
    exit 2
    ;;
esac
