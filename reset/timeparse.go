package reset

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// timeLayouts are the forms ParseTime accepts, zoned ones first. Layouts
// without a zone are read as UTC: an operator typing 2026-11-01T10:00 during
// an incident means the time in the logs, which are in UTC, not the laptop's
// zone.
var timeLayouts = []struct {
	layout string
	zoned  bool
}{
	{time.RFC3339Nano, true},
	{"2006-01-02T15:04Z07:00", true},
	{"2006-01-02T15Z07:00", true},
	{"2006-01-02T15:04:05.999999999", false},
	{"2006-01-02T15:04", false},
	{"2006-01-02", false},
}

// ParseTime reads a point in time: RFC 3339 (2026-11-01T10:00:00Z,
// 2026-11-01T10:00:00.250+02:00), the same without seconds
// (2026-11-01T10:00Z) or without a zone (2026-11-01T10:00, read as UTC), a
// date alone (2026-11-01, midnight UTC), a space instead of the T, or epoch
// seconds (1761991200, fractions allowed).
func ParseTime(s string) (time.Time, error) {
	in := strings.TrimSpace(s)
	if in == "" {
		return time.Time{}, fmt.Errorf("empty time")
	}
	if isEpoch(in) {
		whole, frac, _ := strings.Cut(in, ".")
		sec, err := strconv.ParseInt(whole, 10, 64)
		if err == nil {
			frac = (frac + "000000000")[:9]
			nsec, _ := strconv.ParseInt(frac, 10, 64)
			return time.Unix(sec, nsec).UTC(), nil
		}
	}
	if len(in) > 10 && in[10] == ' ' {
		in = in[:10] + "T" + in[11:]
	}
	in = strings.Replace(in, "t", "T", 1)
	if strings.HasSuffix(in, "z") {
		in = in[:len(in)-1] + "Z"
	}
	for _, l := range timeLayouts {
		if l.zoned {
			if t, err := time.Parse(l.layout, in); err == nil {
				return t, nil
			}
			continue
		}
		if t, err := time.ParseInLocation(l.layout, in, time.UTC); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("cannot parse %q as a time: use RFC 3339 (2026-11-01T10:00:00Z), a short form (2026-11-01T10:00Z, 2026-11-01; UTC unless a zone is given) or epoch seconds", s)
}

func isEpoch(s string) bool {
	dots := 0
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == '.':
			dots++
		case s[i] < '0' || s[i] > '9':
			return false
		}
	}
	return dots <= 1 && len(s) >= 9 // shorter digit strings are more likely typos than 1970s times
}

// ParseAgo reads the --by-duration value: a Go duration (90m, 2h30m) with
// days allowed in front (2d, 1d12h). It must be positive.
func ParseAgo(s string) (time.Duration, error) {
	in := strings.TrimSpace(s)
	var days int64
	if i := strings.IndexByte(in, 'd'); i > 0 {
		n, err := strconv.ParseInt(in[:i], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("cannot parse %q as a duration: use 90m, 2h or 1d12h", s)
		}
		days, in = n, in[i+1:]
	}
	var d time.Duration
	if in != "" {
		var err error
		if d, err = time.ParseDuration(in); err != nil {
			return 0, fmt.Errorf("cannot parse %q as a duration: use 90m, 2h or 1d12h", s)
		}
	}
	d += time.Duration(days) * 24 * time.Hour
	if d <= 0 {
		return 0, fmt.Errorf("duration %q must be positive", s)
	}
	return d, nil
}
