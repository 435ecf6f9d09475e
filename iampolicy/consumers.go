package iampolicy

// The resources of the enhanced fan-out consumer commands.
var (
	// consumerAppTable is the lease table consumers deregister reads to tell
	// whether the consumer's application runs: --table, else --app, else
	// the consumer's name (the KCL names its consumer after the application).
	consumerAppTable = &resource{sid: "LeaseTable", arns: func(t Target) []string {
		return []string{t.tableARN(t.or(TablePlaceholder, "table", "app", "consumer-name"))}
	}}
	// consumer is the stream consumer --consumer-name names on each
	// --stream. Its ARN ends with the creation time, unknown in advance:
	// stream/NAME/consumer/CONSUMER:TIMESTAMP.
	consumer = &resource{sid: "StreamConsumer", arns: func(t Target) []string {
		name := t.or(ConsumerPlaceholder, "consumer-name")
		var out []string
		for _, s := range splitList(t.or(StreamPlaceholder, "stream")) {
			out = append(out, t.streamARN(s)+"/consumer/"+name+":*")
		}
		return out
	}}
)

// ConsumerPlaceholder stands for a stream consumer's name the command line
// does not give.
const ConsumerPlaceholder = "${Consumer}"
