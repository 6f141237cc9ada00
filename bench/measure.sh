#!/usr/bin/env bash
# Reproduces docs/performance.md: seeds a PostgreSQL database with workload W
# (or another size), starts procsvc on loopback, drives it with the load tool
# at 16 and 64 clients over REST and GraphQL, and prints req/s, latency
# percentiles, CPU milliseconds per request for procsvc and for PostgreSQL,
# and procsvc's peak RSS.
#
#   bash bench/measure.sh                    # W: 100 000 + 4 × 25 000 procedures
#   PROCEDURES=10000 NOISE=0 bash bench/measure.sh
#   CACHES=0 bash bench/measure.sh           # only without the response cache
#   SERVE_ARGS="--db-prepare" bash bench/measure.sh   # extra serve flags
#   MIX=update WRITE_RATIOS="0 0.01 0.10" bash bench/measure.sh
#       # the realistic mix: reads over five list shapes, writes changing the
#       # priority of existing procedures; a row per (ratio, clients)
#   MIX=dashboard WRITE_RATIOS="0 0.10" CACHES=0 CLIENTS=16 bash bench/measure.sh
#       # the project dashboard (GraphQL only: APIS defaults to graphql): reads
#       # are 20 projects × procedures(first: 10) with category, doer, project,
#       # totalCount × comments(first: 5) with totalCount, each answer checked
#       # (CHECK_EVERY=N checks each client's every Nth, to spare the
#       # client's CPU); writes are the update mix's; a row per (ratio, clients)
#   ADDR=127.0.0.1:18301 bash bench/measure.sh   # serve elsewhere than :18300
#   REUSE_DB_URL=postgres://…/db TOKEN=pms_… bash bench/measure.sh
#       # measure an already seeded database (kept afterwards) instead of
#       # seeding a new one
#   MIX=live PROCEDURES=1000 NOISE=0 bash bench/measure.sh
#       # live updates: SUBSCRIBERS (1000) subscriptions with one token while
#       # procedures are renamed at WRITE_RATE (50/s) for LIVE_DURATION (20s),
#       # per transport of TRANSPORTS ("sse"; "sse ws" for both): delivery
#       # percentiles, procsvc CPU ms per second over the writes, peak RSS.
#       # The server allows SUBSCRIBERS subscriptions and WebSockets per token.
set -euo pipefail
cd "$(dirname "$0")/.."
PROCEDURES=${PROCEDURES:-100000}
NOISE=${NOISE:-4}
NOISE_PROCEDURES=${NOISE_PROCEDURES:-25000}
DURATION=${DURATION:-15s}
CACHES=${CACHES:-"64 0"}   # response cache sizes (MB) to measure; 0 = off
CLIENTS=${CLIENTS:-"16 64"}
MIX=${MIX:-}                       # "update", "dashboard" or "live"; see above
if [ "$MIX" = dashboard ]; then
  APIS=${APIS:-graphql}
  case " $APIS " in *" rest "*) echo "measure.sh: MIX=dashboard reads nested connections, which only GraphQL has: APIS=graphql" >&2; exit 2;; esac
else
  APIS=${APIS:-"rest graphql"}
fi
CHECK_EVERY=${CHECK_EVERY:-1}      # with MIX=dashboard
PG=${PG:-postgres://postgres@127.0.0.1:5432}
WRITE_RATIOS=${WRITE_RATIOS:-"0 0.01 0.10"}   # with MIX=update or dashboard
# The pid and a random tail: two containers sharing the server may run this
# under the same pid.
DB=procsvc_measure_$$_$(od -An -N4 -tx1 /dev/urandom | tr -d ' \n')
DB_CREATED=                        # set once CREATE DATABASE $DB succeeded
SERVER=
ADDR=${ADDR:-127.0.0.1:18300}      # where procsvc serves; another port for a second run at once
BIN=$(mktemp -d)/procsvc
BENCH=$(dirname "$BIN")/procsvc-bench   # the load tools, a binary of their own
# addr_free exits unless ADDR is free: a server already there (another
# measure.sh at once) would be measured in place of ours, and our tokens,
# unknown to it, would put the address in its failed-authentication limit.
addr_free() {
  if curl -s -o /dev/null "http://$ADDR/readyz"; then
    echo "measure.sh: something already serves on $ADDR (another measure.sh?): wait, or set ADDR=127.0.0.1:PORT" >&2
    exit 1
  fi
}
addr_free
# Drops $DB only if this run created it: WITH (FORCE) ends the sessions of
# whoever uses the name, and that must be us.
trap 'kill $SERVER 2>/dev/null || true; [ -z "$DB_CREATED" ] || psql "$PG/postgres?sslmode=disable" -qc "DROP DATABASE IF EXISTS $DB WITH (FORCE)" >/dev/null 2>&1 || true' EXIT

go build -o "$BIN" ./cmd/procsvc
go build -o "$BENCH" ./cmd/procsvc-bench
if [ -n "${REUSE_DB_URL:-}" ]; then
  export DATABASE_URL="$REUSE_DB_URL"
  "$BIN" migrate >/dev/null
  : "${TOKEN:?TOKEN must be set with REUSE_DB_URL}"
else
  psql "$PG/postgres?sslmode=disable" -qc "CREATE DATABASE $DB"
  DB_CREATED=1
  export DATABASE_URL="$PG/$DB?sslmode=disable"
  "$BIN" migrate >/dev/null
  seed=$("$BENCH" seed --procedures "$PROCEDURES" --noise-workspaces "$NOISE" --noise-procedures "$NOISE_PROCEDURES")
  echo "$seed" | head -1
  TOKEN=$(echo "$seed" | awk '/^token:/ {print $2}')
  psql "$DATABASE_URL" -qc "ANALYZE"
fi

ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
# PostgreSQL's CPU: every live server process, plus what the postmaster has
# reaped from exited ones (cutime/cstime), so short-lived backends count too.
pg_ticks() {
  local t=0 p
  for p in $(pgrep -x postgres); do t=$((t + $(awk '{print $14 + $15}' /proc/$p/stat 2>/dev/null || echo 0))); done
  for p in $(pgrep -x -o postgres); do t=$((t + $(awk '{print $16 + $17}' /proc/$p/stat 2>/dev/null || echo 0))); done
  echo $t
}
hz=$(getconf CLK_TCK)

# start_server FLAGS...: serves on ADDR in the background (SERVER is its
# pid) and waits until it is ready.
start_server() {
  addr_free
  PROCSVC_LOG_LEVEL=warn "$BIN" serve --addr "$ADDR" "$@" ${SERVE_ARGS:-} 2>/dev/null &
  SERVER=$!
  for _ in $(seq 1 50); do curl -sf "http://$ADDR/readyz" >/dev/null && break; sleep 0.2; done
  if ! kill -0 "$SERVER" 2>/dev/null; then
    echo "measure.sh: procsvc did not start on $ADDR" >&2
    exit 1
  fi
}

if [ "$MIX" = live ]; then
  SUBSCRIBERS=${SUBSCRIBERS:-1000}
  WRITE_RATE=${WRITE_RATE:-50}
  LIVE_DURATION=${LIVE_DURATION:-20s}
  TRANSPORTS=${TRANSPORTS:-sse}
  LOGS=$(dirname "$BIN")
  printf '| transport | subscribers | writes/s | delivery p50 | delivery p90 | delivery p99 | delivery max | write p50 | write p99 | missed | procsvc CPU ms/s | PostgreSQL CPU ms/s | procsvc peak RSS | errors |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n'
  for transport in $TRANSPORTS; do
    # every subscription shares the token: lift its cap and the rate limit
    start_server --rate-limit 0 --subscriptions-per-token "$SUBSCRIBERS" --websockets-per-token "$SUBSCRIBERS"
    : >"$LOGS/progress"
    "$BENCH" live --url "http://$ADDR" --token "$TOKEN" --transport "$transport" --subscribers "$SUBSCRIBERS" \
      --write-rate "$WRITE_RATE" --duration "$LIVE_DURATION" >"$LOGS/out" 2>"$LOGS/progress" &
    client=$!
    # CPU over the writes alone, not the opening of the subscriptions
    until grep -q '^live: writing' "$LOGS/progress" || ! kill -0 $client 2>/dev/null; do sleep 0.05; done
    a0=$(ticks $SERVER); p0=$(pg_ticks); t0=$(date +%s%N)
    until grep -q '^live: writes done' "$LOGS/progress" || ! kill -0 $client 2>/dev/null; do sleep 0.05; done
    a1=$(ticks $SERVER); p1=$(pg_ticks); t1=$(date +%s%N)
    # missed events exit non-zero: keep the row, show it
    wait $client || true
    out=$(cat "$LOGS/out")
    grep -v '^live: ' "$LOGS/progress" >&2 || true
    wps=$(echo "$out" | sed -n 's/.*writes\/s=\([0-9.]*\).*/\1/p')
    dp50=$(echo "$out" | sed -n 's/.*delivery_p50=\([^ ]*\).*/\1/p'); dp90=$(echo "$out" | sed -n 's/.*delivery_p90=\([^ ]*\).*/\1/p')
    dp99=$(echo "$out" | sed -n 's/.*delivery_p99=\([^ ]*\).*/\1/p'); dmax=$(echo "$out" | sed -n 's/.*delivery_max=\([^ ]*\).*/\1/p')
    wp50=$(echo "$out" | sed -n 's/.*write_p50=\([^ ]*\).*/\1/p'); wp99=$(echo "$out" | sed -n 's/.*write_p99=\([^ ]*\).*/\1/p')
    missed=$(echo "$out" | sed -n 's/.*missed=\([0-9]*\).*/\1/p')
    errs=$(echo "$out" | grep '^errors\[' | tr '\n' ' ' || true)
    secs=$(awk -v d=$((t1 - t0)) 'BEGIN { print d / 1e9 }')
    app=$(awk -v d=$((a1 - a0)) -v s="$secs" -v hz="$hz" 'BEGIN { printf "%.0f", (s > 0 ? d * 1000 / hz / s : 0) }')
    pg=$(awk -v d=$((p1 - p0)) -v s="$secs" -v hz="$hz" 'BEGIN { printf "%.0f", (s > 0 ? d * 1000 / hz / s : 0) }')
    rss=$(awk '/VmHWM/ {print $2, $3}' /proc/$SERVER/status)
    printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' "$transport" "$SUBSCRIBERS" "${wps:--}" \
      "${dp50:--}" "${dp90:--}" "${dp99:--}" "${dmax:--}" "${wp50:--}" "${wp99:--}" "${missed:--}" "$app" "$pg" "$rss" "${errs:-0}"
    kill $SERVER; wait $SERVER 2>/dev/null || true
  done
  exit 0
fi

if [ "$MIX" = update ]; then
  printf '| cache | api | write ratio | clients | reads/s | writes/s | read p50 | read p90 | read p99 | write p50 | write p90 | write p99 | procsvc CPU ms/req | PostgreSQL CPU ms/req | errors | verification |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n'
elif [ "$MIX" = dashboard ]; then
  printf '| cache | api | write ratio | clients | reads/s | writes/s | read p50 | read p90 | read p99 | write p50 | write p90 | write p99 | procsvc CPU ms/req | PostgreSQL CPU ms/req | errors | verification | answers checked |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n'
else
  printf '| cache | api | clients | req/s | p50 | p90 | p99 | procsvc CPU ms/req | PostgreSQL CPU ms/req | errors |\n|---|---|---|---|---|---|---|---|---|---|\n'
fi
for cache in $CACHES; do
start_server --response-cache-mb "$cache" --rate-limit 0
for api in $APIS; do
  if [ "$MIX" = update ] || [ "$MIX" = dashboard ]; then
    for ratio in $WRITE_RATIOS; do
      for c in $CLIENTS; do
        "$BENCH" load --url "http://$ADDR" --token "$TOKEN" --api "$api" --clients "$c" --duration 2s --mix "$MIX" --check-every "$CHECK_EVERY" >/dev/null
        a0=$(ticks $SERVER); p0=$(pg_ticks)
        # a failed verification or check exits non-zero: keep the row, show it
        out=$("$BENCH" load --url "http://$ADDR" --token "$TOKEN" --api "$api" --clients "$c" --duration "$DURATION" --mix "$MIX" --write-ratio "$ratio" --check-every "$CHECK_EVERY") || true
        a1=$(ticks $SERVER); p1=$(pg_ticks)
        n=$(echo "$out" | sed -n 's/^requests=\([0-9]*\).*/\1/p')
        rps=$(echo "$out" | sed -n 's/.*reads\/s=\([0-9.]*\).*/\1/p'); wps=$(echo "$out" | sed -n 's/.*writes\/s=\([0-9.]*\).*/\1/p')
        rp50=$(echo "$out" | sed -n 's/.*read_p50=\([^ ]*\).*/\1/p'); rp90=$(echo "$out" | sed -n 's/.*read_p90=\([^ ]*\).*/\1/p'); rp99=$(echo "$out" | sed -n 's/.*read_p99=\([^ ]*\).*/\1/p')
        wp50=$(echo "$out" | sed -n 's/.*write_p50=\([^ ]*\).*/\1/p'); wp90=$(echo "$out" | sed -n 's/.*write_p90=\([^ ]*\).*/\1/p'); wp99=$(echo "$out" | sed -n 's/.*write_p99=\([^ ]*\).*/\1/p')
        errs=$(echo "$out" | grep '^errors\[' | tr '\n' ' ' || true)
        verify=$(echo "$out" | sed -n 's/.*verification=\([A-Z]*\).*/\1/p')
        app=$(awk -v d=$((a1 - a0)) -v n="${n:-0}" -v hz="$hz" 'BEGIN { printf "%.2f", n ? d * 1000 / hz / n : 0 }')
        pg=$(awk -v d=$((p1 - p0)) -v n="${n:-0}" -v hz="$hz" 'BEGIN { printf "%.2f", n ? d * 1000 / hz / n : 0 }')
        row=$(printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |' "$([ "$cache" = 0 ] && echo off || echo "${cache} MB")" "$api" "$ratio" "$c" \
          "$rps" "$wps" "$rp50" "$rp90" "$rp99" "$wp50" "$wp90" "$wp99" "$app" "$pg" "${errs:-0}" "${verify:--}")
        if [ "$MIX" = dashboard ]; then
          # "checked=N of M shape=OK|FAILED"; failures are in errors too
          checked=$(echo "$out" | sed -n 's/^dashboard: checked=\([0-9]*\) of \([0-9]*\) shape=\([A-Z]*\).*/\1 of \2 \3/p')
          row="$row ${checked:--} |"
        fi
        echo "$row"
      done
    done
    continue
  fi
  for c in $CLIENTS; do
    # warm the caches and connections, then measure
    "$BENCH" load --url "http://$ADDR" --token "$TOKEN" --api "$api" --clients "$c" --duration 2s >/dev/null
    a0=$(ticks $SERVER); p0=$(pg_ticks)
    out=$("$BENCH" load --url "http://$ADDR" --token "$TOKEN" --api "$api" --clients "$c" --duration "$DURATION")
    a1=$(ticks $SERVER); p1=$(pg_ticks)
    n=$(echo "$out" | sed -n 's/.*requests=\([0-9]*\).*/\1/p')
    rps=$(echo "$out" | sed -n 's/.*req\/s=\([0-9.]*\).*/\1/p')
    p50=$(echo "$out" | sed -n 's/.*p50=\([^ ]*\).*/\1/p'); p90=$(echo "$out" | sed -n 's/.*p90=\([^ ]*\).*/\1/p'); p99=$(echo "$out" | sed -n 's/.*p99=\([^ ]*\).*/\1/p')
    errs=$(echo "$out" | grep -c '^errors\[' || true)
    app=$(awk -v d=$((a1 - a0)) -v n="$n" -v hz="$hz" 'BEGIN { printf "%.2f", d * 1000 / hz / n }')
    pg=$(awk -v d=$((p1 - p0)) -v n="$n" -v hz="$hz" 'BEGIN { printf "%.2f", d * 1000 / hz / n }')
    printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' "$([ "$cache" = 0 ] && echo off || echo "${cache} MB")" "$api" "$c" "$rps" "$p50" "$p90" "$p99" "$app" "$pg" "$errs"
  done
done
echo "procsvc peak RSS (cache $cache): $(awk '/VmHWM/ {print $2, $3}' /proc/$SERVER/status)" >&2
kill $SERVER; wait $SERVER 2>/dev/null || true
done
