package kinesisrec

import "github.com/kcltool/kcltool/internal/testenv/kpltest"

// Short names for the aggregate builders, which the tests here use often.
type userRecord = kpltest.Record

var (
	aggregateProto = kpltest.Proto
	frame          = kpltest.Frame
	aggregate      = kpltest.Aggregate
)
