# The smallest handler the examples' image runs: one JSON record per line on
# stdin (docs/handler.md); exit 0 checkpoints the batch, non-zero retries it.
import base64
import json
import sys

for line in sys.stdin:
    record = json.loads(line)
    data = base64.b64decode(record["data"])
    print(f"{record['partitionKey']}: {len(data)} bytes", file=sys.stderr)
