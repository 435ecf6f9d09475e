#!/usr/bin/env bash
# Starts and stops the local AWS servers used by `make demo` and by hand:
# dynalite (DynamoDB), kinesis-local (Kinesis) and s3rver (S3, for
# --backup-dir s3://...), all on 127.0.0.1 only.
# The Go tests do not use this script: they start their own servers on free
# ports (internal/testenv/emulator), so a running demo never disturbs a test run.
# (scripts/localaws_test.go tests the script itself, on free ports.)
#
# Ports: KCLTOOL_LOCAL_DYNAMODB_PORT (18000), KCLTOOL_LOCAL_KINESIS_PORT
# (18001), KCLTOOL_LOCAL_KINESIS_TLS_PORT (18002), KCLTOOL_LOCAL_S3_PORT
# (18003; its bucket KCLTOOL_LOCAL_S3_BUCKET, kcltool-backups). `up` refuses
# to start when one is taken by another process.
#
#   scripts/localaws.sh up     install the pinned packages if needed, start both
#   scripts/localaws.sh down   stop both
#   scripts/localaws.sh env    print the environment a shell needs to reach them
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
# KCLTOOL_LOCAL_STATE_DIR moves the pid files and logs (the script's tests
# use their own, so they never stop a developer's servers).
state=${KCLTOOL_LOCAL_STATE_DIR:-"$root/.emulators"}
ddb_port=${KCLTOOL_LOCAL_DYNAMODB_PORT:-18000}
kin_port=${KCLTOOL_LOCAL_KINESIS_PORT:-18001}
kin_tls_port=${KCLTOOL_LOCAL_KINESIS_TLS_PORT:-18002}
s3_port=${KCLTOOL_LOCAL_S3_PORT:-18003}
s3_bucket=${KCLTOOL_LOCAL_S3_BUCKET:-kcltool-backups}

need_node() {
  command -v node >/dev/null 2>&1 || { echo "localaws: node is not installed; the local DynamoDB and Kinesis servers need Node.js 20 or newer" >&2; exit 1; }
  command -v npm >/dev/null 2>&1 || { echo "localaws: npm is not installed; it installs the pinned local servers from package-lock.json" >&2; exit 1; }
}

install() {
  need_node
  if [ ! -f "$root/node_modules/dynalite/cli.js" ] || [ ! -f "$root/node_modules/kinesis-local/main.js" ] ||
     [ ! -f "$root/node_modules/s3rver/bin/s3rver.js" ]; then
    echo "localaws: installing pinned servers (npm ci)" >&2
    (cd "$root" && npm ci --no-audit --no-fund --loglevel=error >&2)
  fi
}

# port_open: something accepts connections on 127.0.0.1:$1.
port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

port_in_use() { # port what variable
  echo "localaws: port $1 ($2) is already in use by another process (another checkout's 'make up'?); stop it, or move the local $2 with $3=<free port>, set the same way for 'make up', 'make demo' and 'scripts/localaws.sh env'" >&2
}

# check_ports refuses to start when a port is taken by a process that is not
# one of ours (ours were stopped just before): the servers would fail to
# bind, and the demo would talk to whatever answers there instead.
check_ports() {
  local busy=0 spec port what var
  for spec in "$ddb_port:DynamoDB:KCLTOOL_LOCAL_DYNAMODB_PORT" \
              "$kin_port:Kinesis:KCLTOOL_LOCAL_KINESIS_PORT" \
              "$kin_tls_port:Kinesis TLS:KCLTOOL_LOCAL_KINESIS_TLS_PORT" \
              "$s3_port:S3:KCLTOOL_LOCAL_S3_PORT"; do
    IFS=: read -r port what var <<<"$spec"
    if port_open "$port"; then
      port_in_use "$port" "$what" "$var"
      busy=1
    fi
  done
  [ "$busy" = 0 ] || exit 1
}

check_port_values() {
  local v
  for v in "$ddb_port" "$kin_port" "$kin_tls_port" "$s3_port"; do
    case "$v" in
      '' | *[!0-9]*) echo "localaws: port '$v' is not a number (KCLTOOL_LOCAL_DYNAMODB_PORT, KCLTOOL_LOCAL_KINESIS_PORT, KCLTOOL_LOCAL_KINESIS_TLS_PORT)" >&2; exit 2 ;;
    esac
  done
  if [ "$ddb_port" = "$kin_port" ] || [ "$ddb_port" = "$kin_tls_port" ] || [ "$kin_port" = "$kin_tls_port" ]; then
    echo "localaws: the DynamoDB, Kinesis and Kinesis TLS ports must differ (now $ddb_port, $kin_port, $kin_tls_port)" >&2
    exit 2
  fi
}

# wait_port waits until our server (pid) answers on its port. A server that
# exits first, say because it could not bind, is reported rather than
# whatever else answers on the port being taken for it.
wait_port() { # port name pid what variable
  for _ in $(seq 1 150); do
    if ! kill -0 "$3" 2>/dev/null; then
      if grep -q EADDRINUSE "$state/$2.log" 2>/dev/null; then
        port_in_use "$1" "$4" "$5"
      fi
      echo "localaws: $2 exited before it answered on 127.0.0.1:$1; see $state/$2.log" >&2
      tail -20 "$state/$2.log" >&2 || true
      down quiet
      exit 1
    fi
    if port_open "$1"; then
      # Still ours a moment later: a server that lost the port at bind
      # exits at once.
      sleep 0.2
      if kill -0 "$3" 2>/dev/null; then return 0; fi
      continue
    fi
    sleep 0.1
  done
  echo "localaws: $2 did not start on 127.0.0.1:$1; see $state/$2.log" >&2
  tail -20 "$state/$2.log" >&2 || true
  down quiet
  exit 1
}

up() {
  check_port_values
  install
  mkdir -p "$state"
  down quiet
  check_ports
  node -r "$root/scripts/loopback.cjs" -r "$root/scripts/dynalite-gsi.cjs" "$root/node_modules/dynalite/cli.js" \
    --host 127.0.0.1 --port "$ddb_port" --createTableMs 50 --deleteTableMs 50 --updateTableMs 50 \
    >"$state/dynalite.log" 2>&1 &
  ddb_pid=$!
  echo "$ddb_pid" >"$state/dynalite.pid"
  KINESIS_MOCK_PLAIN_PORT=$kin_port KINESIS_MOCK_TLS_PORT=$kin_tls_port \
  KINESIS_MOCK_CERT_PATH="$root/node_modules/kinesis-local/server.json" \
  CREATE_STREAM_DURATION=50ms DELETE_STREAM_DURATION=50ms SPLIT_SHARD_DURATION=50ms \
  MERGE_SHARDS_DURATION=50ms UPDATE_SHARD_COUNT_DURATION=50ms SHARD_LIMIT=200 LOG_LEVEL=ERROR \
    node -r "$root/scripts/loopback.cjs" "$root/node_modules/kinesis-local/main.js" \
    >"$state/kinesis-local.log" 2>&1 &
  kin_pid=$!
  echo "$kin_pid" >"$state/kinesis-local.pid"
  # s3rver keeps its buckets on disk: a fresh folder, as the others start
  # empty. See docs/local-servers.md for the preload and the legacy provider.
  rm -rf "$state/s3rver" && mkdir -p "$state/s3rver"
  node --openssl-legacy-provider -r "$root/scripts/loopback.cjs" -r "$root/scripts/s3rver-anykey.cjs" \
    "$root/node_modules/s3rver/bin/s3rver.js" --directory "$state/s3rver" --address 127.0.0.1 --port "$s3_port" \
    --silent --configure-bucket "$s3_bucket" >"$state/s3rver.log" 2>&1 &
  s3_pid=$!
  echo "$s3_pid" >"$state/s3rver.pid"
  wait_port "$ddb_port" dynalite "$ddb_pid" DynamoDB KCLTOOL_LOCAL_DYNAMODB_PORT
  wait_port "$kin_port" kinesis-local "$kin_pid" Kinesis KCLTOOL_LOCAL_KINESIS_PORT
  wait_port "$s3_port" s3rver "$s3_pid" S3 KCLTOOL_LOCAL_S3_PORT
  echo "localaws: DynamoDB on http://127.0.0.1:$ddb_port, Kinesis on http://127.0.0.1:$kin_port, S3 on http://127.0.0.1:$s3_port (bucket $s3_bucket)" >&2
}

down() {
  for name in dynalite kinesis-local s3rver; do
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

# env_lines: AWS_DEFAULT_REGION too, since the AWS CLI v1 reads only that one.
env_lines() {
  cat <<ENV
export AWS_ENDPOINT_URL_DYNAMODB=http://127.0.0.1:$ddb_port
export AWS_ENDPOINT_URL_KINESIS=http://127.0.0.1:$kin_port
export AWS_ENDPOINT_URL_S3=http://127.0.0.1:$s3_port
export AWS_ACCESS_KEY_ID=local AWS_SECRET_ACCESS_KEY=local AWS_REGION=us-east-1 AWS_DEFAULT_REGION=us-east-1
ENV
}

case "${1:-}" in
  install) install ;;
  up) up ;;
  down) down ;;
  env) env_lines ;;
  *) echo "usage: $0 install|up|down|env" >&2; exit 2 ;;
esac
