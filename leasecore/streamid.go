package leasecore

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// StreamIdentifier is a KCL multi-stream identifier, serialized
// "<account>:<stream>:<creationEpoch>" in a multi-stream lease's streamName
// attribute and as the prefix of its lease key.
type StreamIdentifier struct {
	Account       string // digits
	Name          string // the stream's name: not empty, no colon
	CreationEpoch int64  // > 0
}

// String is the serialized form, as the KCL writes it.
func (s StreamIdentifier) String() string {
	return s.Account + ":" + s.Name + ":" + strconv.FormatInt(s.CreationEpoch, 10)
}

// ParseStreamIdentifier is the one checked parser of a serialized stream
// identifier, with the KCL's rules (StreamIdentifier.multiStreamInstance:
// digits, a name without a colon, digits; the epoch a long above 0). Its
// error says what is wrong, for messages that name the item. Every reader
// of a streamName or of a multi-stream lease key goes through it, so that
// a hand-made item is an error, never an index out of range.
func ParseStreamIdentifier(s string) (StreamIdentifier, error) {
	if s == "" {
		return StreamIdentifier{}, errors.New("is empty")
	}
	parts := strings.Split(s, ":")
	if len(parts) != 3 {
		return StreamIdentifier{}, fmt.Errorf("%s has %d colon-separated parts, want 3 (account:stream:creationEpoch)", quoteShort(s), len(parts))
	}
	id := StreamIdentifier{Account: parts[0], Name: parts[1]}
	if id.Account == "" || !isDigits(id.Account) {
		return StreamIdentifier{}, fmt.Errorf("%s: the account %s is not digits (want account:stream:creationEpoch)", quoteShort(s), quoteShort(id.Account))
	}
	if id.Name == "" {
		return StreamIdentifier{}, fmt.Errorf("%s: the stream name is empty (want account:stream:creationEpoch)", quoteShort(s))
	}
	epoch, err := strconv.ParseInt(parts[2], 10, 64)
	if err != nil || !isDigits(parts[2]) || epoch <= 0 {
		return StreamIdentifier{}, fmt.Errorf("%s: the creation epoch %s is not a number of seconds above 0 (want account:stream:creationEpoch)", quoteShort(s), quoteShort(parts[2]))
	}
	id.CreationEpoch = epoch
	return id, nil
}

// MultiStream is the stream of a multi-stream lease, checked: its
// streamName attribute, or failing that the prefix of its key. ok is false
// for a single-stream lease. A streamName the KCL could not parse gives a
// *MalformedError naming the lease key (DecodeLease refuses such items, so
// only a lease built otherwise gets one).
func (l Lease) MultiStream() (id StreamIdentifier, ok bool, err error) {
	if l.StreamName != "" {
		id, err := ParseStreamIdentifier(l.StreamName)
		if err != nil {
			return StreamIdentifier{}, false, &MalformedError{LeaseKey: l.LeaseKey, Attr: AttrStreamName, Reason: err.Error()}
		}
		return id, true, nil
	}
	stream, _, ok := ParseMultiStreamKey(l.LeaseKey)
	if !ok {
		return StreamIdentifier{}, false, nil
	}
	id, _ = ParseStreamIdentifier(stream) // checked by ParseMultiStreamKey
	return id, true, nil
}

// ValidStreamIdentifier reports whether s is a serialized multi-stream
// StreamIdentifier "<account>:<stream>:<creationEpoch>" with an epoch that
// parses as a Java long and is > 0, as StreamIdentifier requires.
func ValidStreamIdentifier(s string) bool {
	_, err := ParseStreamIdentifier(s)
	return err == nil
}
