package cmdutil

import (
	"strings"
	"testing"
	"time"
)

func TestHumanDuration(t *testing.T) {
	for _, c := range []struct {
		d    time.Duration
		want string
	}{
		{0, "0s"},
		{-time.Second, "0s"},
		{time.Millisecond, "<1s"},
		{499 * time.Millisecond, "<1s"},
		{500 * time.Millisecond, "1s"},
		{2400 * time.Millisecond, "2s"},
		{32 * time.Second, "32s"},
		{59*time.Second + 499*time.Millisecond, "59s"},
		{59*time.Second + 500*time.Millisecond, "1m0s"},
		{4*time.Minute + 10*time.Second + 300*time.Millisecond, "4m10s"},
		{59*time.Minute + 59*time.Second + 700*time.Millisecond, "1h0m"},
		{2*time.Hour + 3*time.Minute + 29*time.Second, "2h3m"},
		{2*time.Hour + 3*time.Minute + 30*time.Second, "2h4m"},
		{23*time.Hour + 59*time.Minute + 40*time.Second, "1d0h"},
		{76*time.Hour + 29*time.Minute, "3d4h"},
		{365 * 24 * time.Hour, "365d0h"},
	} {
		got := HumanDuration(c.d)
		if got != c.want {
			t.Errorf("humanDuration(%v) = %q, want %q", c.d, got, c.want)
		}
		if strings.ContainsAny(got, " .") {
			t.Errorf("humanDuration(%v) = %q has a space or a fraction", c.d, got)
		}
	}
}
