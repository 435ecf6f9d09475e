// Package kinesisrec is the record model below the consumer and the
// operator's tool, as the KCL keeps it in its retrieval package
// (KinesisClientRecord, AggregatorUtil): a Kinesis record or KPL sub-record
// with its (sequence, sub-sequence) position, KPL de-aggregation filtered by
// the shard's hash range, and the filter that drops records at or below a
// checkpoint. runner reads shards with it and reset uses it to place a
// checkpoint inside an aggregate; it depends only on leasecore.
package kinesisrec
