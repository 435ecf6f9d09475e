package leasecore

import (
	"math/big"
	"testing"
)

const top = "340282366920938463463374607431768211455" // 2^128-1

func TestNewHashRange(t *testing.T) {
	for _, bad := range [][2]string{{"x", "1"}, {"1", ""}, {"5", "4"}} {
		if _, err := NewHashRange(bad[0], bad[1]); err == nil {
			t.Errorf("NewHashRange(%q, %q) accepted", bad[0], bad[1])
		}
	}
	hr, err := NewHashRange("", "")
	if err != nil || hr.String() != "0.."+top {
		t.Errorf("unknown range = %s, %v", hr, err)
	}
	// A lease's range is not bounded to the key space: it only filters.
	if _, err := NewHashRange("-1", top+"0"); err != nil {
		t.Errorf("out-of-space lease range refused: %v", err)
	}
}

func TestParseHashRange(t *testing.T) {
	for _, bad := range [][2]string{{"", ""}, {"x", "1"}, {"-1", "5"}, {"0", top + "0"}, {"5", "4"}} {
		if _, err := ParseHashRange(bad[0], bad[1]); err == nil {
			t.Errorf("ParseHashRange(%q, %q) accepted", bad[0], bad[1])
		}
	}
	hr, err := ParseHashRange("0", top)
	if err != nil || hr.Share() != 1 || hr.String() != "0.."+top {
		t.Errorf("whole range = %s share %v, %v", hr, hr.Share(), err)
	}
}

func TestHashRangeContains(t *testing.T) {
	n := func(s string) *big.Int { k, _ := new(big.Int).SetString(s, 10); return k }
	whole := HashRange{}
	for _, k := range []string{"0", "12345", top} {
		if !whole.Contains(n(k)) {
			t.Errorf("zero range lacks %s", k)
		}
	}
	for _, k := range []string{"-1", top + "0"} {
		if whole.Contains(n(k)) {
			t.Errorf("zero range holds %s", k)
		}
	}
	hr, _ := NewHashRange("10", "20")
	for k, want := range map[string]bool{"9": false, "10": true, "20": true, "21": false} {
		if hr.Contains(n(k)) != want {
			t.Errorf("10..20 holds %s: %v", k, !want)
		}
	}
	if hr.Size().Int64() != 11 || whole.Size().Cmp(KeySpace) != 0 || whole.Share() != 1 {
		t.Errorf("sizes: %s, %s, share %v", hr.Size(), whole.Size(), whole.Share())
	}
}
