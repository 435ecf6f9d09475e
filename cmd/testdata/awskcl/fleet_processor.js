// A record processor written against the aws-kcl package's documented API
// (its README): it appends each batch to $OUT, after a header line naming
// the worker, the shard and the attempt (always 1: the MultiLang protocol
// does not tell), and checkpoints after every batch. Shard 3 takes longer
// per batch so that the merge's child has records waiting while a parent
// is behind, as the --exec fleet test's handler does.
'use strict';

const fs = require('fs');
const kcl = require('aws-kcl');

const out = process.env.OUT;
const worker = process.env.KCLTOOL_WORKER_ID;

function recordProcessor() {
  let shardId;
  return {
    initialize: function (initializeInput, completeCallback) {
      shardId = initializeInput.shardId;
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
      const delay = shardId.endsWith('3') ? 250 : 100;
      setTimeout(function () {
        fs.appendFileSync(out, text);
        const last = records[records.length - 1].sequenceNumber;
        processRecordsInput.checkpointer.checkpoint(last, function (err) {
          if (err) {
            process.stderr.write('checkpoint ' + last + ' failed: ' + err + '\n');
          }
          completeCallback();
        });
      }, delay);
    },

    leaseLost: function (leaseLostInput, completeCallback) {
      completeCallback();
    },

    shardEnded: function (shardEndedInput, completeCallback) {
      shardEndedInput.checkpointer.checkpoint(function (err) {
        if (err) {
          process.stderr.write('shard end checkpoint failed: ' + err + '\n');
        }
        completeCallback();
      });
    },

    shutdownRequested: function (shutdownRequestedInput, completeCallback) {
      shutdownRequestedInput.checkpointer.checkpoint(function (err) {
        completeCallback();
      });
    },
  };
}

kcl(recordProcessor()).run();
