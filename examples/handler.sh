#!/bin/sh
# handler.sh: append every record's data to orders.log, one line each, and
# report the first record that could not be written.
# Run as: kcltool run --app orders --stream orders --exec ./handler.sh
set -u
while IFS= read -r line; do
  seq=$(printf '%s\n' "$line" | sed 's/.*"sequenceNumber":"\([0-9]*\)".*/\1/')
  data=$(printf '%s\n' "$line" | sed 's/.*"data":"\([^"]*\)".*/\1/' | base64 -d)
  if ! printf '%s %s\n' "$KCLTOOL_SHARD_ID" "$data" >> orders.log; then
    echo "cannot append record $seq to orders.log" >&2
    printf '{"batchItemFailures":[{"itemIdentifier":"%s"}]}\n' "$seq"
    exit 0
  fi
done
echo "shard $KCLTOOL_SHARD_ID: wrote $KCLTOOL_BATCH_SIZE records (attempt $KCLTOOL_ATTEMPT)" >&2
