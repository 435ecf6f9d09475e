package jsonscan

// base64Span is the number of leading bytes of b in the standard base64
// alphabet, counted sixteen a step while sixteen are left
// (base64_amd64.s): a count c with c+16 > len(b) is to be checked on from
// c. Record data is most of an answer's bytes, and SSE2 checks them at
// about a quarter of the instructions of base64Stops.
//
//go:noescape
func base64Span(b []byte) int
