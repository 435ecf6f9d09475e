// Package shellquote quotes words for the commands kcltool prints for a
// person to paste into a shell (the undo of a reset, doctor's repairs, usage
// hints). One copy, so that every printed command quotes alike.
package shellquote

import "strings"

// Quote returns s as one word for a POSIX shell: as it is when it is made
// only of characters no shell treats specially, so that the usual table,
// shard and file names stay readable; otherwise in single quotes, inside
// which nothing is special, with each embedded single quote written as
// '\” (close, an escaped quote, reopen). The empty string is ”.
func Quote(s string) string {
	if s != "" && s[0] != '=' && strings.IndexFunc(s, unsafe) < 0 {
		// A leading '=' stays quoted: zsh (macOS's default shell) expands
		// =word to the path of the command word.
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// unsafe reports a rune outside the short list that no POSIX shell (nor
// bash or zsh) interprets inside an argument: '~', '#', '!', '*', '{', '$'
// and the like are quoted, and so is anything beyond ASCII rather than
// trusted to the shell's locale. ',' is safe (brace expansion needs a
// '{'), so a comma-separated --shard list stays bare.
func unsafe(r rune) bool {
	return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:=+@,", r))
}
