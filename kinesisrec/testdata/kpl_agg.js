// Builds KPL aggregates with the aws-kinesis-agg npm package (a producer
// kcltool did not write) and prints them as JSON for deaggregate_npm_test.go:
//
//   {"aggregates": [{"data": base64 blob, "partitionKey": outer key,
//                    "records": [{"partitionKey", "explicitHashKey"?, "data": base64}]}]}
//
// The input is fixed, so the output is the same on every run. Each
// aggregate's "records" are the input records it holds, in order; how many
// that is is read back with the package's own de-aggregator, the rest comes
// from the input.
'use strict';

let agg;
try {
  agg = require('aws-kinesis-agg');
} catch (e) {
  console.error('kpl_agg.js: the npm package aws-kinesis-agg is not installed; run `npm ci` in the repository root (' + e.message + ')');
  process.exit(3);
}

const keys = ['alpha', 'bravo', 'charlie', 'delta', 'echo', 'ünïcødé-key'];
// 2^127: the first hash key of the upper half of the key space.
const deltaHashKey = '170141183460469231731687303715884105728';

function userRecord(i, size) {
  const pk = keys[i % keys.length];
  const head = Buffer.from(pk + ':' + i + ':');
  const body = Buffer.alloc(size);
  for (let j = 0; j < size; j++) body[j] = (i * 31 + j * 7) & 0xff; // binary, not just text
  const r = { partitionKey: pk, data: Buffer.concat([head, body]) };
  if (pk === 'delta') r.explicitHashKey = deltaHashKey;
  return r;
}

function countSubRecords(blob) {
  let n = -1;
  agg.deaggregateSync({ data: blob.toString('base64') }, true, (err, recs) => {
    if (err) throw err;
    n = recs.length;
  });
  return n;
}

const out = [];
let next = 0;
function emit(encoded) {
  const n = countSubRecords(encoded.data);
  out.push({
    data: encoded.data.toString('base64'),
    partitionKey: encoded.partitionKey,
    records: inputs.slice(next, next + n).map((r) => {
      const o = { partitionKey: r.partitionKey, data: Buffer.from(r.data).toString('base64') };
      if (r.explicitHashKey) o.explicitHashKey = r.explicitHashKey;
      return o;
    }),
  });
  next += n;
}

// Part 1: RecordAggregator, flushed by hand into aggregates of 1, 5 and 17
// records (so several aggregates, one with a single record).
const inputs = [];
const ra = new agg.RecordAggregator();
let i = 0;
for (const size of [1, 5, 17]) {
  for (let k = 0; k < size; k++, i++) {
    const r = userRecord(i, (i * 13) % 90);
    inputs.push(r);
    ra.addUserRecord(r);
  }
  emit(ra.build());
}

// Part 2: the package's aggregate() entry point, which splits by size on
// its own: every seventh record is 300 KB, so 1 MB aggregates fill up.
// One record has empty data.
const part2 = [];
for (let k = 0; k < 40; k++, i++) {
  const r = userRecord(i, k % 7 === 3 ? 300 * 1024 : (k * 5) % 40);
  if (k === 11) r.data = Buffer.alloc(0);
  part2.push(r);
  inputs.push(r);
}
agg.aggregate(
  part2,
  (encoded, cb) => { emit(encoded); cb(); },
  () => {
    if (next !== inputs.length) {
      console.error('kpl_agg.js: aggregates hold ' + next + ' records, expected ' + inputs.length);
      process.exit(1);
    }
    process.stdout.write(JSON.stringify({ aggregates: out }) + '\n');
  },
  (err) => { console.error('kpl_agg.js: ' + err); process.exit(1); },
);
