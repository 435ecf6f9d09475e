// mlbench is the MultiLang record processor of TestBenchMultiLang: the
// least a child speaking the KCL's MultiLang protocol does. It reads each
// line, checkpoints every processRecords at its last record's sequence
// number (as the aws-kcl library sends it: the sequence number only) and
// waits for the reply, checkpoints at the shard end and on a shutdown
// request, and acknowledges every message with its status. It looks at no
// record but the last, as the benchmark's peer processor looks at none: its
// cost is the protocol's, not a processor's. With $MLBENCH_STARTS it notes
// what its own start cost (noteStart).
package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
	"time"
)

var (
	in  = bufio.NewReaderSize(os.Stdin, 4<<20)
	out = bufio.NewWriter(os.Stdout)
)

func main() {
	for {
		line, err := readLine()
		if err != nil {
			return // EOF: the daemon is done with this child
		}
		// A copy: the reply to a checkpoint reuses line's buffer.
		action := string(stringField(line, `"action":"`, false))
		switch action {
		case "processRecords":
			if seq := stringField(line, `"sequenceNumber":"`, true); seq != nil {
				checkpoint(`"` + string(seq) + `"`)
			}
		case "shardEnded", "shutdownRequested":
			checkpoint("null")
		case "":
			continue
		}
		fmt.Fprintf(out, `{"action":"status","responseFor":"%s"}`+"\n", action)
		flush()
		if action == "initialize" {
			noteStart()
		}
	}
}

// noteStart appends when this child was ready and the CPU time its start
// took (from its fork on) to $MLBENCH_STARTS: a child starts once per
// lease, and the benchmark counts that as start-up.
func noteStart() {
	path := os.Getenv("MLBENCH_STARTS")
	if path == "" {
		return
	}
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return
	}
	defer f.Close()
	fmt.Fprintf(f, "%d %d\n", time.Now().UnixNano(), ru.Utime.Nano()+ru.Stime.Nano())
}

// checkpoint asks for a checkpoint at seq (JSON: a string or null) and
// waits for the reply; an error reply ends the child.
func checkpoint(seq string) {
	fmt.Fprintf(out, `{"action":"checkpoint","sequenceNumber":%s}`+"\n", seq)
	flush()
	reply, err := readLine()
	if err != nil {
		os.Exit(3)
	}
	if !bytes.Contains(reply, []byte(`"error":null`)) {
		fmt.Fprintf(os.Stderr, "mlbench: checkpoint refused: %s", reply)
		os.Exit(2)
	}
}

// stringField is the first (or last) string value after key in line.
func stringField(line []byte, key string, last bool) []byte {
	i := bytes.Index(line, []byte(key))
	if last {
		i = bytes.LastIndex(line, []byte(key))
	}
	if i < 0 {
		return nil
	}
	v := line[i+len(key):]
	if j := bytes.IndexByte(v, '"'); j >= 0 {
		return v[:j]
	}
	return nil
}

// readLine reads one line; a processRecords of 1,000 records is about
// 250 kB, well within the buffer.
func readLine() ([]byte, error) {
	line, err := in.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		full := append([]byte(nil), line...)
		for errors.Is(err, bufio.ErrBufferFull) {
			line, err = in.ReadSlice('\n')
			full = append(full, line...)
		}
		line = full
	}
	if err != nil && (err != io.EOF || len(line) == 0) {
		return nil, err
	}
	return line, nil
}

func flush() {
	if err := out.Flush(); err != nil {
		os.Exit(4)
	}
}
