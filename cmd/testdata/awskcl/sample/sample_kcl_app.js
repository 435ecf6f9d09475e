// The consumer of the aws-kcl package's basic sample, in the shape of the
// example in its README: it stores the data it receives in one file per
// shard, in its working folder, and checkpoints after every batch and at
// the shard end.
'use strict';

var fs = require('fs');
var kcl = require('aws-kcl');

function recordProcessor() {
  var shardId;

  return {
    initialize: function(initializeInput, completeCallback) {
      shardId = initializeInput.shardId;
      completeCallback();
    },

    processRecords: function(processRecordsInput, completeCallback) {
      if (!processRecordsInput || !processRecordsInput.records) {
        completeCallback();
        return;
      }
      var records = processRecordsInput.records;
      var record, data, sequenceNumber, partitionKey;
      for (var i = 0 ; i < records.length ; ++i) {
        record = records[i];
        data = Buffer.from(record.data, 'base64').toString();
        sequenceNumber = record.sequenceNumber;
        partitionKey = record.partitionKey;
        fs.appendFileSync(shardId + '.log', partitionKey + ' ' + data + ' ' + sequenceNumber + '\n');
      }
      if (!sequenceNumber) {
        completeCallback();
        return;
      }
      processRecordsInput.checkpointer.checkpoint(sequenceNumber, function(err, checkpointedSequenceNumber) {
        if (err) {
          console.error('checkpoint at ' + sequenceNumber + ' failed: ' + err);
        }
        completeCallback();
      });
    },

    leaseLost: function(leaseLostInput, completeCallback) {
      completeCallback();
    },

    shardEnded: function(shardEndedInput, completeCallback) {
      shardEndedInput.checkpointer.checkpoint(function(err) {
        completeCallback();
      });
    },

    shutdownRequested: function(shutdownRequestedInput, completeCallback) {
      shutdownRequestedInput.checkpointer.checkpoint(function(err) {
        completeCallback();
      });
    }
  };
}

kcl(recordProcessor()).run();
