#!/usr/bin/env bash
# Reads from a hot standby against the primary alone (docs/performance.md,
# "Failover and reads from standbys"): builds a throwaway PostgreSQL 15
# primary, seeds it, clones a hot standby from it (streaming; synchronous
# by default), then drives procsvc with the load tool's update mix twice
# over the same data: on the primary alone, and with --database-read-url on
# the standby. Every row is measured cold (procsvc just started, both
# servers just restarted) and then warm (the next run, same process).
# Prints one table: req/s, latencies, CPU ms per request of procsvc and of
# each PostgreSQL node (all of that node's processes, the walsender or the
# replaying startup process included), transactions per request on each
# node, and how many reads the standby served.
#
#   bash bench/standby.sh                     # workload W, as measure.sh
#   PROCEDURES=10000 NOISE=0 bash bench/standby.sh
#   APIS=rest CACHES=0 CLIENTS=16 WRITE_RATIOS=0.10 bash bench/standby.sh
#   SYNC=off bash bench/standby.sh            # an asynchronous standby
#   SERVE_ARGS="--read-your-writes 0" bash bench/standby.sh   # extra serve flags
#   MODES=standby bash bench/standby.sh       # only with the standby serving reads
#
# Must run as root (the servers run as the postgres OS user, by runuser) or
# as postgres; needs psql and /usr/lib/postgresql/15/bin (PGBIN).
set -euo pipefail
cd "$(dirname "$0")/.."
PGBIN=${PGBIN:-/usr/lib/postgresql/15/bin}
PROCEDURES=${PROCEDURES:-100000}
NOISE=${NOISE:-4}
NOISE_PROCEDURES=${NOISE_PROCEDURES:-25000}
DURATION=${DURATION:-10s}
CACHES=${CACHES:-"64 0"}
CLIENTS=${CLIENTS:-"16 64"}
APIS=${APIS:-"rest graphql"}
WRITE_RATIOS=${WRITE_RATIOS:-"0 0.10"}
MODES=${MODES:-"primary standby"}   # primary: procsvc on the primary alone; standby: reads from the standby
SYNC=${SYNC:-on}                    # on: the standby is synchronous (COMMIT waits for its flush)

TMP=$(mktemp -d)
chmod 755 "$TMP"
BIN=$TMP/procsvc
BENCH=$TMP/procsvc-bench
P1=$TMP/primary
P2=$TMP/standby
SERVER=
cleanup() {
  [ -z "$SERVER" ] || kill "$SERVER" 2>/dev/null || true
  for d in "$P2" "$P1"; do
    [ -f "$d/postmaster.pid" ] && as_pg "$PGBIN/pg_ctl" -D "$d" -m immediate -w stop >/dev/null 2>&1 || true
  done
  rm -rf "$TMP"
}
trap cleanup EXIT

as_pg() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}
# free_port prints a TCP port nothing listens on.
free_port() {
  local p
  while :; do
    p=$((20000 + RANDOM % 30000))
    ss -Hltn "sport = :$p" | grep -q . || { echo "$p"; return; }
  done
}
PORT1=$(free_port)
PORT2=$(free_port)
while [ "$PORT2" = "$PORT1" ]; do PORT2=$(free_port); done
ADDR=127.0.0.1:$(free_port)
URL1="postgres://postgres@127.0.0.1:$PORT1/bench?sslmode=disable"
URL2="postgres://postgres@127.0.0.1:$PORT2/bench?sslmode=disable"

go build -o "$BIN" ./cmd/procsvc
go build -o "$BENCH" ./cmd/procsvc-bench
[ "$(id -u)" = 0 ] && chown postgres "$TMP"

# The system server's defaults as measure.sh meets them (shared_buffers
# 128MB, fsync on, autovacuum off: the seeded data is VACUUM ANALYZEd once);
# hot_standby_feedback, as a read replica runs, so that the primary's
# cleanup does not cancel the standby's queries.
as_pg "$PGBIN/initdb" -D "$P1" -U postgres -A trust -E UTF8 --locale=C --no-instructions >/dev/null
cat >>"$P1/postgresql.conf" <<EOF
listen_addresses = '127.0.0.1'
unix_socket_directories = ''
shared_buffers = '128MB'
max_connections = 100
autovacuum = off
wal_level = replica
hot_standby = on
hot_standby_feedback = on
max_wal_senders = 4
wal_keep_size = '1GB'
EOF
as_pg "$PGBIN/pg_ctl" -D "$P1" -o "-p $PORT1" -l "$TMP/primary.log" -w start >/dev/null
psql "postgres://postgres@127.0.0.1:$PORT1/postgres?sslmode=disable" -qc "CREATE DATABASE bench"

t0=$(date +%s)
DATABASE_URL=$URL1 "$BIN" migrate >/dev/null
seed=$(DATABASE_URL=$URL1 "$BENCH" seed --procedures "$PROCEDURES" --noise-workspaces "$NOISE" --noise-procedures "$NOISE_PROCEDURES")
TOKEN=$(echo "$seed" | awk '/^token:/ {print $2}')
psql "$URL1" -qc "VACUUM ANALYZE"
psql "$URL1" -qc "CHECKPOINT"
echo "$(echo "$seed" | head -1); with VACUUM ANALYZE $(($(date +%s) - t0))s; database $(psql "$URL1" -Atc "SELECT pg_size_pretty(pg_database_size('bench'))")" >&2

# The standby: a copy of the seeded primary, streaming from it.
t0=$(date +%s)
as_pg "$PGBIN/pg_basebackup" -d "postgres://postgres@127.0.0.1:$PORT1/postgres?sslmode=disable" -D "$P2" -X stream -c fast -R >/dev/null
cat >>"$P2/postgresql.auto.conf" <<EOF
primary_conninfo = 'host=127.0.0.1 port=$PORT1 user=postgres application_name=standby1'
EOF
as_pg "$PGBIN/pg_ctl" -D "$P2" -o "-p $PORT2" -l "$TMP/standby.log" -w start >/dev/null
if [ "$SYNC" = on ]; then
  psql "$URL1" -qc "ALTER SYSTEM SET synchronous_standby_names = 'FIRST 1 (standby1)'"
  psql "$URL1" -qc "SELECT pg_reload_conf()" >/dev/null
fi
want=$([ "$SYNC" = on ] && echo sync || echo async)
for _ in $(seq 1 100); do
  [ "$(psql "$URL1" -Atc "SELECT sync_state FROM pg_stat_replication WHERE application_name = 'standby1' AND state = 'streaming'")" = "$want" ] && break
  sleep 0.2
done
echo "standby streaming ($want) after $(($(date +%s) - t0))s" >&2

hz=$(getconf CLK_TCK)
# node_ticks DIR: CPU ticks of one PostgreSQL node: its postmaster and
# every child alive, plus what the postmaster reaped from exited ones.
node_ticks() {
  local pm t=0 p
  pm=$(head -1 "$1/postmaster.pid")
  t=$(awk '{print $14 + $15 + $16 + $17}' "/proc/$pm/stat")
  for p in $(pgrep -P "$pm"); do t=$((t + $(awk '{print $14 + $15}' "/proc/$p/stat" 2>/dev/null || echo 0))); done
  echo "$t"
}
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
# xacts URL: transactions committed in the bench database so far.
xacts() { psql "$1" -Atc "SELECT xact_commit FROM pg_stat_database WHERE datname = 'bench'"; }
# routed NAME: a counter of procsvc's /metrics.
routed() { curl -s "http://$ADDR/metrics" | awk -v n="$1" '$1 == n {print $2}'; }

restart_nodes() {
  as_pg "$PGBIN/pg_ctl" -D "$P2" -m fast -w stop >/dev/null
  as_pg "$PGBIN/pg_ctl" -D "$P1" -m fast -w restart >/dev/null
  as_pg "$PGBIN/pg_ctl" -D "$P2" -o "-p $PORT2" -l "$TMP/standby.log" -w start >/dev/null
  for _ in $(seq 1 100); do
    [ "$(psql "$URL1" -Atc "SELECT sync_state FROM pg_stat_replication WHERE application_name = 'standby1' AND state = 'streaming'")" = "$want" ] && return
    sleep 0.1
  done
  echo "standby.sh: the standby did not stream again" >&2
  exit 1
}

start_server() {
  PROCSVC_LOG_LEVEL=warn "$BIN" serve --addr "$ADDR" --database-url "$URL1" --rate-limit 0 "$@" ${SERVE_ARGS:-} >>"$TMP/procsvc.log" 2>&1 &
  SERVER=$!
  for _ in $(seq 1 50); do curl -sf "http://$ADDR/readyz" >/dev/null && break; sleep 0.2; done
  if ! kill -0 "$SERVER" 2>/dev/null; then
    echo "standby.sh: procsvc did not start" >&2
    cat "$TMP/procsvc.log" >&2
    exit 1
  fi
}

# measure MODE CACHE API RATIO CLIENTS PHASE: one run of the load tool, one row.
measure() {
  local a0 p0 s0 x0 y0 r0 b0 u0 a1 p1 s1 x1 y1 r1 b1 u1 out n
  # PostgreSQL 15 publishes a backend's counts at most once a second (and
  # an idle one's within that second): let the last run's arrive.
  sleep 1.5
  a0=$(ticks "$SERVER"); p0=$(node_ticks "$P1"); s0=$(node_ticks "$P2"); x0=$(xacts "$URL1"); y0=$(xacts "$URL2")
  r0=$(routed procsvc_reads_standby_total); b0=$(routed procsvc_reads_standby_behind_total); u0=$(routed procsvc_reads_standby_unanswered_total)
  # a failed verification exits non-zero: keep the row, show it
  out=$("$BENCH" load --url "http://$ADDR" --token "$TOKEN" --api "$3" --clients "$5" --duration "$DURATION" --mix update --write-ratio "$4") || true
  a1=$(ticks "$SERVER"); p1=$(node_ticks "$P1"); s1=$(node_ticks "$P2")
  sleep 1.5
  x1=$(xacts "$URL1"); y1=$(xacts "$URL2")
  r1=$(routed procsvc_reads_standby_total); b1=$(routed procsvc_reads_standby_behind_total); u1=$(routed procsvc_reads_standby_unanswered_total)
  n=$(echo "$out" | sed -n 's/^requests=\([0-9]*\).*/\1/p'); n=${n:-0}
  local rps wps rp50 rp99 wp50 wp99 errs verify
  rps=$(echo "$out" | sed -n 's/.*reads\/s=\([0-9.]*\).*/\1/p'); wps=$(echo "$out" | sed -n 's/.*writes\/s=\([0-9.]*\).*/\1/p')
  rp50=$(echo "$out" | sed -n 's/.*read_p50=\([^ ]*\).*/\1/p'); rp99=$(echo "$out" | sed -n 's/.*read_p99=\([^ ]*\).*/\1/p')
  wp50=$(echo "$out" | sed -n 's/.*write_p50=\([^ ]*\).*/\1/p'); wp99=$(echo "$out" | sed -n 's/.*write_p99=\([^ ]*\).*/\1/p')
  errs=$(echo "$out" | grep '^errors\[' | tr '\n' ' ' || true)
  verify=$(echo "$out" | sed -n 's/.*verification=\([A-Z]*\).*/\1/p')
  per() { awk -v d="$1" -v n="$n" -v hz="$hz" 'BEGIN { printf "%.2f", n ? d * 1000 / hz / n : 0 }'; }
  perx() { awk -v d="$1" -v n="$n" 'BEGIN { printf "%.1f", n ? d / n : 0 }'; }
  # Read requests the standby served, of all the run's (the load tool's
  # sampling at the start and verification at the end included); the
  # others read the primary, its standby being behind or not answering.
  local served="-"
  if [ "$1" = standby ]; then
    served=$(awk -v s=$((${r1:-0} - ${r0:-0})) -v b=$((${b1:-0} - ${b0:-0})) -v u=$((${u1:-0} - ${u0:-0})) \
      'BEGIN { printf "%.1f %% (%d of %d)", s + b + u ? 100 * s / (s + b + u) : 0, s, s + b + u }')
  fi
  printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' \
    "$1" "$([ "$2" = 0 ] && echo off || echo "$2 MB")" "$3" "$4" "$5" "$6" "${rps:--}" "${wps:--}" "${rp50:--}" "${rp99:--}" "${wp50:--}" "${wp99:--}" \
    "$(per $((a1 - a0)))" "$(per $((p1 - p0)))" "$(per $((s1 - s0)))" "$(perx $((x1 - x0)))" "$(perx $((y1 - y0)))" "$served" "${errs:-0}" "${verify:--}"
}

printf '| reads from | cache | api | write ratio | clients | phase | reads/s | writes/s | read p50 | read p99 | write p50 | write p99 | procsvc CPU ms/req | primary PG CPU ms/req | standby PG CPU ms/req | primary xacts/req | standby xacts/req | reads served by the standby | errors | verification |\n'
printf '|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n'
for cache in $CACHES; do
  for api in $APIS; do
    for ratio in $WRITE_RATIOS; do
      for c in $CLIENTS; do
        for mode in $MODES; do
          restart_nodes
          args=(--response-cache-mb "$cache")
          [ "$mode" = standby ] && args+=(--database-read-url "$URL2&target_session_attrs=standby")
          start_server "${args[@]}"
          measure "$mode" "$cache" "$api" "$ratio" "$c" cold
          measure "$mode" "$cache" "$api" "$ratio" "$c" warm
          kill "$SERVER"; wait "$SERVER" 2>/dev/null || true
          SERVER=
        done
      done
    done
  done
done
