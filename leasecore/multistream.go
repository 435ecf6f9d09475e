package leasecore

// included keeps the leases Options.Include accepts.
func (c *Coordinator) included(leases []Lease) []Lease {
	if c.include == nil {
		return leases
	}
	out := leases[:0:0]
	for _, l := range leases {
		if c.include(l) {
			out = append(out, l)
		}
	}
	return out
}

// StreamID is the serialized multi-stream identifier
// "<account>:<stream>:<creationEpoch>" of a multi-stream lease (its
// streamName attribute, or the prefix of its key), "" for a single-stream
// lease.
func (l Lease) StreamID() string { return l.streamID() }

// IsMultiStream reports a lease of a KCL multi-stream table.
func (l Lease) IsMultiStream() bool { return l.streamID() != "" }
