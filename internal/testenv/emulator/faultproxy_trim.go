package emulator

import (
	"encoding/json"
	"fmt"
)

// atPosition reports a GetShardIterator at or after a sequence number: the
// only request Kinesis refuses for a position older than the trim horizon.
func atPosition(op string, body []byte) bool {
	if op != "GetShardIterator" {
		return false
	}
	var in struct{ ShardIteratorType, StartingSequenceNumber string }
	_ = json.Unmarshal(body, &in)
	return in.StartingSequenceNumber != "" &&
		(in.ShardIteratorType == "AT_SEQUENCE_NUMBER" || in.ShardIteratorType == "AFTER_SEQUENCE_NUMBER")
}

// trimmedPositionMessage is the message of the InvalidArgumentException the
// TrimmedPosition fault answers: Kinesis's wording for a StartingSequenceNumber
// it cannot serve ("StartingSequenceNumber N used in GetShardIterator on
// shard S in stream X under account A is invalid …"). kcltool relies only on
// the error code and on the request having named a sequence number, never
// on the wording.
func trimmedPositionMessage(body []byte) string {
	var in struct{ StreamName, StreamARN, ShardId, StartingSequenceNumber string }
	_ = json.Unmarshal(body, &in)
	stream := in.StreamName
	if stream == "" {
		stream = in.StreamARN
	}
	return fmt.Sprintf("StartingSequenceNumber %s used in GetShardIterator on shard %s in stream %s under account 000000000000 is invalid because it is before the shard's trim horizon (injected by the test's fault proxy)",
		in.StartingSequenceNumber, in.ShardId, stream)
}
