package leasecore

import "cmp"

// Sentinel checkpoint strings, stored verbatim in the checkpoint attribute
// (KCL SentinelCheckpoint). The names deliberately mirror the Java enum
// constants so that grep finds both sides.
const (
	TRIM_HORIZON = "TRIM_HORIZON"
	LATEST       = "LATEST"
	SHARD_END    = "SHARD_END"
	// AT_TIMESTAMP is stored without its timestamp: the worker substitutes its
	// own configured initial timestamp (docs/kcl-compat.md, Sentinel
	// checkpoints), so an operator tool must never write it as a "reset to
	// time".
	AT_TIMESTAMP = "AT_TIMESTAMP"
)

// IsSentinel reports whether s is one of the four sentinel checkpoints.
func IsSentinel(s string) bool {
	switch s {
	case TRIM_HORIZON, LATEST, SHARD_END, AT_TIMESTAMP:
		return true
	}
	return false
}

// ValidCheckpoint reports whether s is something KCL's
// ExtendedSequenceNumber.compareTo accepts: a sentinel or a non-empty string
// of decimal digits. Anything else makes the Java worker throw
// IllegalArgumentException the first time it compares checkpoints.
func ValidCheckpoint(s string) bool {
	return IsSentinel(s) || isDigits(s)
}

// IsShardEnd reports whether the checkpoint is SHARD_END. Like KCL's
// ExtendedSequenceNumber.isShardEnd it ignores the sub-sequence number.
func (n SequenceNumber) IsShardEnd() bool {
	return n.SequenceNumber == SHARD_END
}

// Compare orders a and b the way KCL's ExtendedSequenceNumber.compareTo does:
// AT_TIMESTAMP < TRIM_HORIZON < LATEST < any sequence number < SHARD_END,
// sequence numbers compared as unbounded integers (they are 56+ digits, far
// beyond int64), ties broken by sub-sequence number. As in KCL, two
// SHARD_END values are equal whatever their sub-sequence numbers.
//
// KCL throws on values that are neither digits nor sentinels; Compare must
// not panic, so it sorts such invalid values below everything valid and
// orders them among themselves by string, then sub-sequence number. Callers
// that care should check ValidCheckpoint first.
func Compare(a, b SequenceNumber) int {
	ra, rb := sentinelRank(a.SequenceNumber), sentinelRank(b.SequenceNumber)
	if ra == rankShardEnd && rb == rankShardEnd {
		return 0
	}
	if ra != rb {
		return cmp.Compare(ra, rb)
	}
	var c int
	switch ra {
	case rankNumber:
		c = compareDigits(a.SequenceNumber, b.SequenceNumber)
	case rankInvalid:
		c = cmp.Compare(a.SequenceNumber, b.SequenceNumber)
	}
	if c != 0 {
		return c
	}
	return cmp.Compare(a.SubSequenceNumber, b.SubSequenceNumber)
}

// Ranks of the value classes, in KCL order. Numbers share one rank and are
// then compared by value.
const (
	rankInvalid = iota - 4
	rankAtTimestamp
	rankTrimHorizon
	rankLatest
	rankNumber
	rankShardEnd
)

func sentinelRank(s string) int {
	switch s {
	case AT_TIMESTAMP:
		return rankAtTimestamp
	case TRIM_HORIZON:
		return rankTrimHorizon
	case LATEST:
		return rankLatest
	case SHARD_END:
		return rankShardEnd
	}
	if isDigits(s) {
		return rankNumber
	}
	return rankInvalid
}

// isDigits reports whether s is a non-empty string of ASCII decimal digits.
// (Java's Character.isDigit also accepts other Unicode digits, but
// BigInteger and Kinesis only ever deal in ASCII ones.)
func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// compareDigits compares two non-empty digit strings numerically without
// allocating a big.Int: strip leading zeros, then a longer string is larger
// and equal lengths compare lexically.
func compareDigits(a, b string) int {
	a, b = trimLeadingZeros(a), trimLeadingZeros(b)
	if len(a) != len(b) {
		return cmp.Compare(len(a), len(b))
	}
	return cmp.Compare(a, b)
}

func trimLeadingZeros(s string) string {
	i := 0
	for i < len(s)-1 && s[i] == '0' {
		i++
	}
	return s[i:]
}
