// Package emulator runs the local AWS servers that kcltool's tests speak the
// real wire protocol to: dynalite for DynamoDB, kinesis-local for Kinesis and
// s3rver for S3 (the backups of checkpoint reset and import).
// Each test binary starts its own servers on free loopback ports, at most once,
// and only the ones it asks for. They are never skipped: without node the tests
// fail and say so.
package emulator

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/kcltool/kcltool/internal/backoff"
)

// server is one running node process.
type server struct {
	name     string
	endpoint string
	cmd      *exec.Cmd
	log      *bytes.Buffer
	dir      string        // the server's own data folder, removed when it stops ("" for none)
	exited   chan struct{} // closed once the process has been waited for
	stopping bool          // set under mu by StopAll, so its exit is expected
}

var (
	mu      sync.Mutex
	servers = map[string]*server{}
	started = map[string]error{}
)

// RepoRoot finds the module root (the folder holding go.mod and package.json)
// by walking up from the working directory, which for a test is its package.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if fileExists(filepath.Join(dir, "go.mod")) && fileExists(filepath.Join(dir, "package.json")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("emulator: cannot find the kcltool repository root (go.mod next to package.json)")
		}
		dir = parent
	}
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// ensureInstalled installs the pinned npm packages when they are missing. Test
// binaries of several packages run at once, so the install holds a file lock.
func ensureInstalled(root string) error {
	if _, err := exec.LookPath("node"); err != nil {
		return errors.New("emulator: node is not installed: kcltool's tests run the local DynamoDB, Kinesis and S3 servers (dynalite, kinesis-local, s3rver) on Node.js 20 or newer; install node and npm")
	}
	ready := func() bool {
		return fileExists(filepath.Join(root, "node_modules", "dynalite", "cli.js")) &&
			fileExists(filepath.Join(root, "node_modules", "kinesis-local", "main.js")) &&
			fileExists(filepath.Join(root, "node_modules", "s3rver", "bin", "s3rver.js"))
	}
	if ready() {
		return nil
	}
	if _, err := exec.LookPath("npm"); err != nil {
		return errors.New("emulator: npm is not installed: it installs the pinned local servers from package-lock.json (or run `make up` once)")
	}
	unlock, err := lockFile(filepath.Join(os.TempDir(), "kcltool-npm-install.lock"))
	if err != nil {
		return err
	}
	defer unlock()
	if ready() {
		return nil
	}
	cmd := exec.Command("npm", "ci", "--no-audit", "--no-fund", "--loglevel=error")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("emulator: npm ci failed: %v\n%s", err, out)
	}
	return nil
}

// lockFile takes an exclusive lock shared by every process on the machine;
// closing the file releases it.
func lockFile(path string) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, err
	}
	return func() { f.Close() }, nil
}

// freePort asks the kernel for an unused loopback port.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func waitPort(port int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(port), 200*time.Millisecond)
		if err == nil {
			c.Close()
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("nothing listens on 127.0.0.1:%d after %s", port, timeout)
}

// start launches name once per process and returns its endpoint URL.
func start(name string) (string, error) {
	mu.Lock()
	defer mu.Unlock()
	if s, ok := servers[name]; ok {
		return s.endpoint, nil
	}
	if err, ok := started[name]; ok {
		return "", err
	}
	s, err := launch(name)
	started[name] = err
	if err != nil {
		return "", err
	}
	servers[name] = s
	return s.endpoint, nil
}

func launch(name string) (*server, error) {
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	if err := ensureInstalled(root); err != nil {
		return nil, err
	}
	// Test binaries of several packages start servers at once. Between
	// freePort closing its probe and node binding the port, another binary
	// could be handed the same port, bind nothing, and talk to our server.
	// One lock across that window, shared by every binary, closes the gap.
	unlock, err := lockFile(filepath.Join(os.TempDir(), "kcltool-emulator-ports.lock"))
	if err != nil {
		return nil, err
	}
	defer unlock()
	// A port freePort gave can still be taken before node binds it, as the
	// local end of any outgoing connection on the machine (the lock only
	// keeps other emulators off it): node then fails with EADDRINUSE, and
	// another pair of ports is tried.
	// Up to three tries, at once: with no wait, Retry needs no sleep.
	var s *server
	noWait := func(int) time.Duration { return 0 }
	err = backoff.Retry(context.Background(), nil, noWait, func(attempt int) (bool, error) {
		var err error
		s, err = launchOnce(root, name)
		return err != nil && attempt < 3 && errors.Is(err, errPortTaken), err
	})
	return s, err
}

// errPortTaken is a server that could not bind a port freePort gave.
var errPortTaken = errors.New("a port it was given was taken meanwhile")

// launchOnce starts name on ports freePort gives, and waits until it
// listens on every one of them.
func launchOnce(root, name string) (*server, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	preload := filepath.Join(root, "scripts", "loopback.cjs")
	var cmd *exec.Cmd
	dir := ""            // the data folder of a server that keeps one
	ports := []int{port} // every port the server binds, waited for under the lock
	switch name {
	case "dynalite":
		// dynalite-gsi.cjs: UpdateTable adds and deletes a global
		// secondary index (KCL 3.x's migration does), which dynalite
		// alone cannot.
		cmd = exec.Command("node", "-r", preload, "-r", filepath.Join(root, "scripts", "dynalite-gsi.cjs"),
			filepath.Join(root, "node_modules", "dynalite", "cli.js"),
			"--host", "127.0.0.1", "--port", strconv.Itoa(port),
			"--createTableMs", "20", "--deleteTableMs", "20", "--updateTableMs", "20")
	case "kinesis-local":
		tlsPort, err := freePort()
		if err != nil {
			return nil, err
		}
		// kinesis-local always opens a TLS port too. Until it is bound,
		// another binary could be handed it; its server would then fail to
		// bind while the port answers, and its tests talk to ours.
		ports = append(ports, tlsPort)
		cmd = exec.Command("node", "-r", preload, filepath.Join(root, "node_modules", "kinesis-local", "main.js"))
		cmd.Env = append(os.Environ(),
			"KINESIS_MOCK_PLAIN_PORT="+strconv.Itoa(port),
			"KINESIS_MOCK_TLS_PORT="+strconv.Itoa(tlsPort),
			"KINESIS_MOCK_CERT_PATH="+filepath.Join(root, "node_modules", "kinesis-local", "server.json"),
			"CREATE_STREAM_DURATION=20ms", "DELETE_STREAM_DURATION=20ms",
			"SPLIT_SHARD_DURATION=20ms", "MERGE_SHARDS_DURATION=20ms",
			"UPDATE_SHARD_COUNT_DURATION=20ms", "SHARD_LIMIT=2000", "LOG_LEVEL=ERROR")
	case "s3rver":
		// A fresh folder per start: s3rver keeps its buckets on disk, and
		// one left by an earlier run would answer for buckets this run
		// never created.
		if dir, err = os.MkdirTemp("", "kcltool-s3rver-"); err != nil {
			return nil, err
		}
		// s3rver-anykey.cjs: s3rver knows only the access key S3RVER; the
		// tests use "local", as for the other two servers. Its
		// ListObjectsV2 continuation tokens are DES-encrypted, which
		// OpenSSL 3 (node 17 and newer) offers only in its legacy
		// provider: without it every truncated listing is a 500.
		cmd = exec.Command("node", "--openssl-legacy-provider", "-r", preload, "-r", filepath.Join(root, "scripts", "s3rver-anykey.cjs"),
			filepath.Join(root, "node_modules", "s3rver", "bin", "s3rver.js"),
			"--directory", dir, "--address", "127.0.0.1", "--port", strconv.Itoa(port), "--silent")
	default:
		return nil, fmt.Errorf("emulator: unknown server %q", name)
	}
	log := &bytes.Buffer{}
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = procAttr()
	if err := startOnPinnedThread(cmd); err != nil {
		removeDir(dir)
		return nil, fmt.Errorf("emulator: start %s: %w", name, err)
	}
	for _, p := range ports {
		if err := waitPort(p, 30*time.Second); err != nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			removeDir(dir)
			if strings.Contains(log.String(), "EADDRINUSE") {
				err = fmt.Errorf("%w: %v", errPortTaken, err)
			}
			return nil, fmt.Errorf("emulator: %s did not start: %w\n%s", name, err, log.String())
		}
	}
	s := &server{name: name, endpoint: "http://127.0.0.1:" + strconv.Itoa(port), cmd: cmd, log: log, dir: dir, exited: make(chan struct{})}
	go s.watch()
	return s, nil
}

// watch reports a server that dies while tests still use it. Every later
// test then fails with "connection refused", which names neither the server
// nor why; its exit status and own output do.
func (s *server) watch() {
	err := s.cmd.Wait()
	close(s.exited)
	mu.Lock()
	expected := s.stopping
	mu.Unlock()
	if !expected {
		fmt.Fprintf(os.Stderr, "emulator: %s (pid %d) exited while tests were using it: %v\n%s\n", s.name, s.cmd.Process.Pid, err, s.log.String())
	}
}

// Pdeathsig is delivered when the OS thread that forked the server exits,
// not when the process does. Go ends a thread whenever a goroutine that
// locked it returns (in any library a test pulls in), so a server forked on
// such a thread would die mid-test, with "connection refused" in every later
// test. Every server is therefore forked from one goroutine locked to its
// own thread that never returns.
var starts = make(chan startReq)

type startReq struct {
	cmd  *exec.Cmd
	done chan error
}

var startPinned sync.Once

func startOnPinnedThread(cmd *exec.Cmd) error {
	startPinned.Do(func() {
		go func() {
			runtime.LockOSThread() // never unlocked: the thread lives as long as the process
			for r := range starts {
				r.done <- r.cmd.Start()
			}
		}()
	})
	done := make(chan error, 1)
	starts <- startReq{cmd: cmd, done: done}
	return <-done
}

// StopAll stops every server this process started.
func StopAll() {
	stopEFOProxy()
	mu.Lock()
	defer mu.Unlock()
	for name, s := range servers {
		s.stopping = true
		_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-s.exited:
		case <-time.After(3 * time.Second):
			_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
			<-s.exited
		}
		removeDir(s.dir)
		delete(servers, name)
	}
}

// removeDir deletes a server's data folder, if it has one.
func removeDir(dir string) {
	if dir != "" {
		_ = os.RemoveAll(dir)
	}
}
