// A record processor written against the aws-kcl package's documented API
// for the KCL 3.x graceful handoff test. It appends each batch to $OUT, as
// fleet_processor.js does, but never checkpoints in processRecords: the
// only checkpoint of a shard it loses by a handoff is the one it writes
// when it gets shutdownRequested, at the last record it was given, so the
// test can tell that checkpoint from any other. Each shutdownRequested is
// appended to $OUT.events with that sequence number; processRecords waits
// $DELAY_MS per batch so that a batch is in flight when the handoff comes.
'use strict';

const fs = require('fs');
const kcl = require('aws-kcl');

const out = process.env.OUT;
const events = out + '.events';
const worker = process.env.KCLTOOL_WORKER_ID;
const delay = parseInt(process.env.DELAY_MS || '100', 10);

function recordProcessor() {
  let shardId;
  let last = null;
  return {
    initialize: function (initializeInput, completeCallback) {
      shardId = initializeInput.shardId;
      fs.appendFileSync(events, 'initialize ' + worker + ' ' + shardId + ' ' + initializeInput.sequenceNumber + '\n');
      completeCallback();
    },

    processRecords: function (processRecordsInput, completeCallback) {
      const records = processRecordsInput.records;
      if (!records || records.length === 0) {
        completeCallback();
        return;
      }
      let text = '# ' + worker + ' ' + shardId + ' 1\n';
      for (const r of records) {
        text += JSON.stringify({
          data: r.data, partitionKey: r.partitionKey, sequenceNumber: r.sequenceNumber, shardId: shardId,
        }) + '\n';
      }
      setTimeout(function () {
        fs.appendFileSync(out, text);
        last = records[records.length - 1].sequenceNumber;
        completeCallback();
      }, delay);
    },

    leaseLost: function (leaseLostInput, completeCallback) {
      fs.appendFileSync(events, 'leaseLost ' + worker + ' ' + shardId + '\n');
      completeCallback();
    },

    shardEnded: function (shardEndedInput, completeCallback) {
      shardEndedInput.checkpointer.checkpoint(function (err) {
        completeCallback();
      });
    },

    shutdownRequested: function (shutdownRequestedInput, completeCallback) {
      fs.appendFileSync(events, 'shutdownRequested ' + worker + ' ' + shardId + ' ' + last + '\n');
      if (last === null) {
        completeCallback();
        return;
      }
      shutdownRequestedInput.checkpointer.checkpoint(last, function (err) {
        fs.appendFileSync(events, 'checkpointed ' + worker + ' ' + shardId + ' ' + last + (err ? ' error ' + err : '') + '\n');
        completeCallback();
      });
    },
  };
}

kcl(recordProcessor()).run();
