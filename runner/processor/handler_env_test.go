package processor

import (
	"context"
	"strings"
	"testing"
)

// A handler inherits exactly the environment it is given: a variable of
// this process that the caller left out does not reach it.
func TestHandlerInheritsOnlyGivenEnv(t *testing.T) {
	t.Setenv("KCLTOOL_TEST_LEAK", "leaked")
	h := &Handler{Argv: []string{"/bin/sh", "-c", `echo "${KCLTOOL_TEST_LEAK-unset} $GIVEN"`}, Env: []string{"GIVEN=given"}}
	res := h.Run(context.Background(), testBatch(1))
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	if got := strings.TrimSpace(res.Output); got != "unset given" {
		t.Fatalf("handler saw %q, want %q", got, "unset given")
	}
}
