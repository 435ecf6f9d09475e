package cmdutil

import (
	"fmt"
	"strconv"

	"github.com/kcltool/kcltool/reshard"
)

// Cell and value formatting that several commands' tables and rows share.

// Itoa is n in decimal.
func Itoa(n int64) string { return strconv.FormatInt(n, 10) }

// FloatStr is *f as short as it reads back exactly, or "" for nil.
func FloatStr(f *float64) string {
	if f == nil {
		return ""
	}
	return strconv.FormatFloat(*f, 'f', -1, 64)
}

// HashRange is "start-end", or "" when the lease has no hash range.
func HashRange(start, end string) string {
	if start == "" && end == "" {
		return ""
	}
	return start + "-" + end
}

// Plural is "1 word" or "n words".
func Plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// BlockerIDs lists the parent shard ids that hold a child back.
func BlockerIDs(bs []reshard.Blocker) []string {
	if len(bs) == 0 {
		return nil
	}
	ids := make([]string, len(bs))
	for i, b := range bs {
		ids[i] = b.ShardID
	}
	return ids
}

// Deref is *s, or "" for nil.
func Deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
