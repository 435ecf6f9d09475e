package scripts

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
)

// TestLocalAWSUpServerThatCouldNotBind: a port that is bound but not
// listening passes the check (nothing answers there), and dynalite then
// fails to bind and exits. `up` reports that at once, as the port in use
// with its variable, and stops the other server; before, it waited out its
// 15 s and said only that dynalite did not start (or, had anything
// answered there, took it for dynalite).
func TestLocalAWSUpServerThatCouldNotBind(t *testing.T) {
	l := newLocalAWS(t)
	// A socket bound to the port without listening, and without
	// SO_REUSEADDR, so that node's bind fails with EADDRINUSE.
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Port: l.ddb, Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}

	_, errOut, code := l.run("up")
	if code != 1 {
		t.Errorf("exit %d, want 1:\n%s", code, errOut)
	}
	for _, w := range []string{
		fmt.Sprintf("localaws: port %d (DynamoDB) is already in use by another process", l.ddb),
		"KCLTOOL_LOCAL_DYNAMODB_PORT=<free port>",
		fmt.Sprintf("localaws: dynalite exited before it answered on 127.0.0.1:%d", l.ddb),
	} {
		if !strings.Contains(errOut, w) {
			t.Errorf("stderr lacks %q:\n%s", w, errOut)
		}
	}
	if p := l.pidFiles(); len(p) != 0 {
		t.Errorf("servers left running: %v", p)
	}
	if answers(l.kin) {
		t.Errorf("kinesis-local still answers on %d", l.kin)
	}
}
