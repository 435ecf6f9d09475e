#!/usr/bin/env bash
# Starts and stops the local AWS servers used by `make demo` and by hand:
# dynalite (DynamoDB) and kinesis-local (Kinesis), both on 127.0.0.1 only.
# The Go tests do not use this script: they start their own servers on free
# ports (internal/emulator), so a running demo never disturbs a test run.
#
#   scripts/localaws.sh up     install the pinned packages if needed, start both
#   scripts/localaws.sh down   stop both
#   scripts/localaws.sh env    print the environment a shell needs to reach them
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
state="$root/.emulators"
ddb_port=${KCLTOOL_LOCAL_DYNAMODB_PORT:-18000}
kin_port=${KCLTOOL_LOCAL_KINESIS_PORT:-18001}
kin_tls_port=${KCLTOOL_LOCAL_KINESIS_TLS_PORT:-18002}

need_node() {
  command -v node >/dev/null 2>&1 || { echo "localaws: node is not installed; the local DynamoDB and Kinesis servers need Node.js 20 or newer" >&2; exit 1; }
  command -v npm >/dev/null 2>&1 || { echo "localaws: npm is not installed; it installs the pinned local servers from package-lock.json" >&2; exit 1; }
}

install() {
  need_node
  if [ ! -f "$root/node_modules/dynalite/cli.js" ] || [ ! -f "$root/node_modules/kinesis-local/main.js" ]; then
    echo "localaws: installing pinned servers (npm ci)" >&2
    (cd "$root" && npm ci --no-audit --no-fund --loglevel=error >&2)
  fi
}

wait_port() { # port name
  for _ in $(seq 1 150); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; then return 0; fi
    sleep 0.1
  done
  echo "localaws: $2 did not start on 127.0.0.1:$1; see $state/$2.log" >&2
  tail -20 "$state/$2.log" >&2 || true
  exit 1
}

up() {
  install
  mkdir -p "$state"
  down quiet
  node -r "$root/scripts/loopback.cjs" "$root/node_modules/dynalite/cli.js" \
    --host 127.0.0.1 --port "$ddb_port" --createTableMs 50 --deleteTableMs 50 --updateTableMs 50 \
    >"$state/dynalite.log" 2>&1 &
  echo $! >"$state/dynalite.pid"
  KINESIS_MOCK_PLAIN_PORT=$kin_port KINESIS_MOCK_TLS_PORT=$kin_tls_port \
  KINESIS_MOCK_CERT_PATH="$root/node_modules/kinesis-local/server.json" \
  CREATE_STREAM_DURATION=50ms DELETE_STREAM_DURATION=50ms SPLIT_SHARD_DURATION=50ms \
  MERGE_SHARDS_DURATION=50ms UPDATE_SHARD_COUNT_DURATION=50ms SHARD_LIMIT=200 LOG_LEVEL=ERROR \
    node -r "$root/scripts/loopback.cjs" "$root/node_modules/kinesis-local/main.js" \
    >"$state/kinesis-local.log" 2>&1 &
  echo $! >"$state/kinesis-local.pid"
  wait_port "$ddb_port" dynalite
  wait_port "$kin_port" kinesis-local
  echo "localaws: DynamoDB on http://127.0.0.1:$ddb_port, Kinesis on http://127.0.0.1:$kin_port" >&2
}

down() {
  for name in dynalite kinesis-local; do
    pidfile="$state/$name.pid"
    [ -f "$pidfile" ] || continue
    pid=$(cat "$pidfile")
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
    rm -f "$pidfile"
  done
  [ "${1:-}" = quiet ] || echo "localaws: stopped" >&2
}

env_lines() {
  cat <<ENV
export AWS_ENDPOINT_URL_DYNAMODB=http://127.0.0.1:$ddb_port
export AWS_ENDPOINT_URL_KINESIS=http://127.0.0.1:$kin_port
export AWS_ACCESS_KEY_ID=local AWS_SECRET_ACCESS_KEY=local AWS_REGION=us-east-1
ENV
}

case "${1:-}" in
  install) install ;;
  up) up ;;
  down) down ;;
  env) env_lines ;;
  *) echo "usage: $0 install|up|down|env" >&2; exit 2 ;;
esac
