package emulator

import (
	"fmt"
	"net/http"
	"strings"
	"time"
)

// signatureWindow is how far a request's signing time may be from the
// server's clock before AWS refuses it (SigV4: five minutes either way).
const signatureWindow = 5 * time.Minute

// amzDate is the layout of X-Amz-Date, and of the times AWS names in its
// refusals.
const amzDate = "20060102T150405Z"

// SetClockOffset makes the proxy answer as a server whose clock is d ahead
// of this machine's (behind, for a negative d), as a real account's is when
// the local clock drifts: every answer's Date header is the shifted time,
// and a request signed (X-Amz-Date) more than five minutes away from it is
// refused as AWS refuses it, HTTP 400 InvalidSignatureException, without
// reaching the server. The local servers check no signatures, so without
// this a client that ignores the server's clock passes every test. The
// SDK learns the offset from the Date of the refusal and signs the calls
// after it with the corrected time.
func (p *FaultProxy) SetClockOffset(d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clockOffset, p.clockSet = d, true
}

// Refused is how many requests of operation op (the part of X-Amz-Target
// after the dot) the proxy refused for their signing time.
func (p *FaultProxy) Refused(op string) int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.refused[op]
}

// serverNow is the proxy's shifted clock, and whether the clock mode is on.
func (p *FaultProxy) serverNow() (time.Time, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return time.Now().Add(p.clockOffset).UTC(), p.clockSet
}

// stampDate sets h's Date to the shifted clock in the clock mode.
func (p *FaultProxy) stampDate(h http.Header) {
	if now, ok := p.serverNow(); ok {
		h.Set("Date", now.Format(http.TimeFormat))
	}
}

// refuseSignature answers a request signed too far from the shifted clock
// as AWS does and reports whether it did. A request without X-Amz-Date
// passes: it is not signed with SigV4 headers, and only the time is
// checked here.
func (p *FaultProxy) refuseSignature(w http.ResponseWriter, r *http.Request) bool {
	now, on := p.serverNow()
	signed, err := time.Parse(amzDate, r.Header.Get("X-Amz-Date"))
	if !on || err != nil {
		return false
	}
	var msg string
	switch {
	case signed.Before(now.Add(-signatureWindow)):
		msg = fmt.Sprintf("Signature expired: %s is now earlier than %s (%s - 5 min.)",
			signed.Format(amzDate), now.Add(-signatureWindow).Format(amzDate), now.Format(amzDate))
	case signed.After(now.Add(signatureWindow)):
		msg = fmt.Sprintf("Signature not yet current: %s is still later than %s (%s + 5 min.)",
			signed.Format(amzDate), now.Add(signatureWindow).Format(amzDate), now.Format(amzDate))
	default:
		return false
	}
	target := r.Header.Get("X-Amz-Target")
	op := target[strings.LastIndex(target, ".")+1:]
	p.mu.Lock()
	p.requests[op]++
	p.refused[op]++
	p.mu.Unlock()
	// DynamoDB names the error with its namespace, Kinesis without.
	typ := "InvalidSignatureException"
	if strings.HasPrefix(target, "DynamoDB_") {
		typ = "com.amazon.coral.service#InvalidSignatureException"
	}
	w.Header().Set("Date", now.Format(http.TimeFormat))
	answer(w, http.StatusBadRequest, typ, msg)
	return true
}
