package cmdutil

import (
	"strconv"
	"time"
)

// HumanDuration rounds a duration for people: its two most significant
// units, rounded to the second of them, and no fractions: "32s", "4m10s",
// "2h3m", "3d4h". 0 is "0s"; a positive duration under half a second is
// "<1s", never "0s", so a shard that is behind never reads as caught up.
// Both units are always shown ("1h0m"), so a column of them lines up by
// magnitude. The value has no spaces, so awk reads it as one field.
func HumanDuration(d time.Duration) string {
	if d <= 0 {
		return "0s"
	}
	if d < time.Second/2 {
		return "<1s"
	}
	// Round at the tier's precision, then pick the tier by the rounded
	// value: 59m59.7s rounds to 1h0m, not to "60m0s".
	if s := d.Round(time.Second); s < time.Minute {
		return Itoa(int64(s/time.Second)) + "s"
	} else if s < time.Hour {
		return two(s, time.Minute, "m", time.Second, "s")
	}
	if m := d.Round(time.Minute); m < 24*time.Hour {
		return two(m, time.Hour, "h", time.Minute, "m")
	}
	return two(d.Round(time.Hour), 24*time.Hour, "d", time.Hour, "h")
}

func two(d, big time.Duration, bigName string, small time.Duration, smallName string) string {
	return strconv.FormatInt(int64(d/big), 10) + bigName + strconv.FormatInt(int64(d%big/small), 10) + smallName
}
