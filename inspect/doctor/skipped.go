package doctor

import (
	"slices"
	"strings"
)

// checkSkipped says which checks did not run, so "no findings" is never
// read as "all clear" when it only means "not looked at".
func checkSkipped(fc *facts) (out []Finding) {
	if len(fc.skipped) == 0 {
		return
	}
	out = append(out, Finding{
		ID: FindChecksSkipped, Severity: SeverityInfo,
		Summary:  "skipped: " + strings.Join(fc.skipped, "; "),
		Evidence: Evidence{Lines: slices.Clone(fc.skipped)}, // the facts stay the facts
		Cause:    "the data these checks need was not available",
		Fix:      "give what is missing (for example --stream) to run them",
	})
	return
}
