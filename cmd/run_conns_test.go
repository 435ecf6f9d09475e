package cmd

import (
	"testing"
	"time"

	"github.com/kcltool/kcltool/internal/testenv/emulator"
)

// A worker keeps its lease-table connections. It renews 20 leases at once
// (KCL's renewal concurrency), beyond the 10 idle connections per host the
// SDK's HTTP client keeps; before the factory raised that limit, every
// renewal round closed the extra connections and dialled them again (each
// one a TCP and, against AWS, a TLS handshake).
func TestRunReusesLeaseTableConnections(t *testing.T) {
	s := newE2EStack(t, 20)
	proxy := emulator.NewFaultProxy(t, emulator.DynamoDBEndpoint(t), emulator.Throttle, 0, "", 1)
	startWorker(t, "A", []string{"AWS_ENDPOINT_URL_DYNAMODB=" + proxy.URL}, runArgs(s, "A", "--exec", "cat >/dev/null")...)
	eventuallyE2E(t, 60*time.Second, "A to hold all 20 leases", func() bool { return s.owners(t)["A"] == 20 })
	time.Sleep(time.Second) // let the takes and the shards' first reads settle

	conns, updates := proxy.Conns.Load(), proxy.Requests()["UpdateItem"]
	// A 2s failover time renews every 667ms: six rounds of 20 renewals.
	time.Sleep(4 * time.Second)
	rounds := float64(proxy.Requests()["UpdateItem"]-updates) / 20
	opened := proxy.Conns.Load() - conns
	if rounds < 4 {
		t.Fatalf("%.1f renewal rounds in 4s, want about 6: the test saw too little to judge", rounds)
	}
	// Without kept idle connections each round dials the 10 beyond the
	// SDK's pool again: about 10 per round. With them, new connections come
	// only when more requests than ever before are in flight at once, which
	// a loaded machine causes now and then (make test once saw 8 over six
	// rounds, against about 60 with the old pool). Allow a few per round.
	if limit := 3 * rounds; float64(opened) > limit {
		t.Errorf("%d new lease-table connections over %.1f renewal rounds of 20 leases, want at most %.0f: idle connections are not kept", opened, rounds, limit)
	}
	t.Logf("%d new connections over %.1f renewal rounds", opened, rounds)
}
