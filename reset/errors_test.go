package reset

import (
	"strings"
	"testing"
)

// A refusal names the override as an option, not as a flag: flags are
// cmd's, which says them through Explain.
func TestRefusedErrorNamesNoFlag(t *testing.T) {
	e := &RefusedError{Workers: []string{"w1"}, Moved: []string{"shardId-000000000001"}, Handoff: []string{"shardId-000000000002"}}
	if msg := e.Error(); strings.Contains(msg, "--") {
		t.Errorf("Error() names a flag: %s", msg)
	}
	want := "the application is running: 1 lease counter moved during the sample (workers w1); stop it first, or pass --force to reset it live; " +
		"leases in a KCL 3.x graceful handoff (checkpointOwner set): shardId-000000000002; wait for the handoff to finish, or pass --force"
	if got := e.Explain("pass --force"); got != want {
		t.Errorf("Explain:\n got %s\nwant %s", got, want)
	}
}
