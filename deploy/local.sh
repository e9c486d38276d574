#!/usr/bin/env bash
# Three jobclock instances behind HAProxy on one PostgreSQL, on this machine:
#   deploy/local.sh                      # an embedded PostgreSQL shared by the three
#   DATABASE_URL=postgres://… deploy/local.sh
# Workers and producers talk to http://127.0.0.1:${JOBCLOCK_LB_PORT:-8080}. Ctrl-C stops everything.
# Needs haproxy (Debian: apt-get install haproxy).
set -euo pipefail
cd "$(dirname "$0")/.."
command -v haproxy >/dev/null || { echo "haproxy is not installed (apt-get install haproxy)" >&2; exit 1; }
npm run --silent build

export JOBCLOCK_LB_PORT="${JOBCLOCK_LB_PORT:-8080}"
export JOBCLOCK_PORT_1="${JOBCLOCK_PORT_1:-3001}" JOBCLOCK_PORT_2="${JOBCLOCK_PORT_2:-3002}" JOBCLOCK_PORT_3="${JOBCLOCK_PORT_3:-3003}"
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  wait || true
}
trap cleanup EXIT INT TERM

if [ -z "${DATABASE_URL:-}" ]; then
  fifo=$(mktemp -u); mkfifo "$fifo"
  node deploy/postgres.mjs >"$fifo" &
  pids+=($!)
  read -r DATABASE_URL <"$fifo"; rm -f "$fifo"
  export DATABASE_URL
fi

for port in "$JOBCLOCK_PORT_1" "$JOBCLOCK_PORT_2" "$JOBCLOCK_PORT_3"; do
  PORT="$port" node dist/src/main.js &
  pids+=($!)
done
haproxy -db -f deploy/haproxy/haproxy.cfg &
pids+=($!)
echo "jobclock: http://127.0.0.1:${JOBCLOCK_LB_PORT} (instances on ${JOBCLOCK_PORT_1}, ${JOBCLOCK_PORT_2}, ${JOBCLOCK_PORT_3})"
wait -n
