package cmd

import (
	"fmt"
	"strconv"

	"github.com/kcltool/kcltool/reshard"
)

// Cell and value formatting that several commands' tables and rows share.

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func floatStr(f *float64) string {
	if f == nil {
		return ""
	}
	return strconv.FormatFloat(*f, 'f', -1, 64)
}

func hashRange(start, end string) string {
	if start == "" && end == "" {
		return ""
	}
	return start + "-" + end
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// blockerIDs lists the parent shard ids that hold a child back.
func blockerIDs(bs []reshard.Blocker) []string {
	if len(bs) == 0 {
		return nil
	}
	ids := make([]string, len(bs))
	for i, b := range bs {
		ids[i] = b.ShardID
	}
	return ids
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
