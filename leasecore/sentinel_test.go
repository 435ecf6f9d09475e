package leasecore

import "testing"

func TestCompareOrder(t *testing.T) {
	const big = "49590338271490256608559692538361571095921575989136588898"
	// Strictly increasing in KCL order.
	ordered := []SequenceNumber{
		{SequenceNumber: AT_TIMESTAMP},
		{SequenceNumber: AT_TIMESTAMP, SubSequenceNumber: 1},
		{SequenceNumber: TRIM_HORIZON},
		{SequenceNumber: LATEST},
		{SequenceNumber: LATEST, SubSequenceNumber: 1},
		{SequenceNumber: "0"},
		{SequenceNumber: "1"},
		{SequenceNumber: "1", SubSequenceNumber: 1},
		{SequenceNumber: "9"},
		{SequenceNumber: "10"},
		{SequenceNumber: "9223372036854775807"},
		{SequenceNumber: "9223372036854775808"}, // past int64: still numeric order
		{SequenceNumber: big},
		{SequenceNumber: big, SubSequenceNumber: 3},
		{SequenceNumber: "49590338271490256608559692538361571095921575989136588899"},
		{SequenceNumber: "100000000000000000000000000000000000000000000000000000000"},
		{SequenceNumber: SHARD_END},
	}
	for i, a := range ordered {
		for j, b := range ordered {
			want := 0
			if i < j {
				want = -1
			} else if i > j {
				want = 1
			}
			if got := Compare(a, b); got != want {
				t.Errorf("Compare(%v, %v) = %d, want %d", a, b, got, want)
			}
		}
	}
}

func TestCompareEqualities(t *testing.T) {
	tests := []struct {
		a, b SequenceNumber
		want int
	}{
		{SequenceNumber{"007", 0}, SequenceNumber{"7", 0}, 0}, // numeric value, not text
		{SequenceNumber{"000", 0}, SequenceNumber{"0", 0}, 0},
		{SequenceNumber{"10", 0}, SequenceNumber{"9", 5}, 1},
		// KCL: SHARD_END equals SHARD_END whatever the sub-sequence number.
		{SequenceNumber{SHARD_END, 0}, SequenceNumber{SHARD_END, 5}, 0},
		// Invalid values (KCL throws) sort below everything, never panic.
		{SequenceNumber{"abc", 0}, SequenceNumber{AT_TIMESTAMP, 0}, -1},
		{SequenceNumber{"", 0}, SequenceNumber{"abc", 0}, -1},
		{SequenceNumber{SHARD_END, 0}, SequenceNumber{"-1", 0}, 1},
	}
	for _, tt := range tests {
		if got := Compare(tt.a, tt.b); got != tt.want {
			t.Errorf("Compare(%v, %v) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
		if got := Compare(tt.b, tt.a); got != -tt.want {
			t.Errorf("Compare(%v, %v) = %d, want %d", tt.b, tt.a, got, -tt.want)
		}
	}
}

func TestSentinelPredicates(t *testing.T) {
	for _, s := range []string{TRIM_HORIZON, LATEST, SHARD_END, AT_TIMESTAMP} {
		if !IsSentinel(s) || !ValidCheckpoint(s) {
			t.Errorf("%s: IsSentinel/ValidCheckpoint false", s)
		}
	}
	valid := []string{"0", "12345", "49590338271490256608559692538361571095921575989136588898"}
	invalid := []string{"", "abc", "-1", "+1", "1.0", "1e5", " 1", "trim_horizon", "SHARD_END ", "١٢"}
	for _, s := range valid {
		if !ValidCheckpoint(s) || IsSentinel(s) {
			t.Errorf("%q: ValidCheckpoint %v IsSentinel %v", s, ValidCheckpoint(s), IsSentinel(s))
		}
	}
	for _, s := range invalid {
		if ValidCheckpoint(s) || IsSentinel(s) {
			t.Errorf("%q: ValidCheckpoint %v IsSentinel %v, want both false", s, ValidCheckpoint(s), IsSentinel(s))
		}
	}
	if !(SequenceNumber{SequenceNumber: SHARD_END}).IsShardEnd() || (SequenceNumber{SequenceNumber: LATEST}).IsShardEnd() {
		t.Error("IsShardEnd wrong")
	}
}
