package reset

import (
	"fmt"
	"strings"
)

// InvalidEntry is an entry of an export or positions file that cannot be
// used: its item does not parse, is marked a lease but KCL could not read
// it, names another leaseKey than its item, repeats a key, or holds a
// checkpoint that is not one. Entries the export itself marked malformed
// or non-lease are not invalid: they are carried as they are.
type InvalidEntry struct {
	// Place is where the entry is: "line 6" in a CSV, "line 10, item 5" in
	// a JSON export.
	Place string
	// LeaseKey is the entry's key when it can be read, "" otherwise.
	LeaseKey string
	Reason   string
}

func (e InvalidEntry) String() string {
	key := e.LeaseKey
	if key == "" {
		key = "leaseKey unknown"
	}
	return e.Place + " (" + key + "): " + e.Reason
}

// InvalidEntriesError refuses a file with entries that cannot be used,
// whole: nothing is written, every bad entry is named. It is returned
// wrapped in an *InputError.
type InvalidEntriesError struct {
	File    string
	Entries []InvalidEntry
}

func (e *InvalidEntriesError) Error() string { return e.Say(Setting.String) }

// Say is Error with the skip setting said by name (InputError.Say).
func (e *InvalidEntriesError) Say(name func(Setting) string) string {
	return fmt.Sprintf("%s: %s cannot be used, so nothing was written: %s; fix the file, or pass %s to apply the rest (exit 3)",
		e.File, entries(len(e.Entries)), listEntries(e.Entries), name(SettingSkip))
}

// refuseInvalid is the rule of every file a plan reads: any entry that
// cannot be used refuses the file, unless skip (--skip-invalid), when the
// plan warns of each and remembers them in Plan.Invalid.
func refuseInvalid(p *Plan, file string, invalid []InvalidEntry, skip bool) error {
	if len(invalid) == 0 {
		return nil
	}
	if !skip {
		return &InputError{Err: &InvalidEntriesError{File: file, Entries: invalid}}
	}
	for _, e := range invalid {
		p.warnf("%s %s: skipped (--skip-invalid)", file, e)
	}
	p.Invalid, p.InvalidFile = invalid, file
	return nil
}

func entries(n int) string {
	if n == 1 {
		return "1 entry"
	}
	return fmt.Sprintf("%d entries", n)
}

// listEntries joins entries for one line, the first ten in full.
func listEntries(es []InvalidEntry) string {
	var parts []string
	for i, e := range es {
		if i == 10 {
			parts = append(parts, fmt.Sprintf("and %d more", len(es)-10))
			break
		}
		parts = append(parts, e.String())
	}
	return strings.Join(parts, "; ")
}

// SkippedText says which entries of the file a plan skipped, for the
// problem its command exits 3 with.
func (p *Plan) SkippedText() string {
	return fmt.Sprintf("%s of %s skipped (--skip-invalid), not written: %s", entries(len(p.Invalid)), p.InvalidFile, listEntries(p.Invalid))
}
