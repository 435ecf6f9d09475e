#include "textflag.h"

// func base64Span(b []byte) int
//
// The number of leading bytes of b in the standard base64 alphabet,
// sixteen bytes a step (SSE2, which every amd64 has) while sixteen are
// left: a count c with c+16 > len(b) means the caller checks from c on.
// Signed byte compares leave bytes of 0x80 and above out of every range.
TEXT ·base64Span(SB), NOSPLIT, $0-32
	MOVQ b_base+0(FP), SI
	MOVQ b_len+8(FP), CX
	XORQ AX, AX
	MOVQ $0x2020202020202020, DX
	MOVQ DX, X8
	PUNPCKLQDQ X8, X8 // 0x20: upper case to lower case
	MOVQ $0x6060606060606060, DX
	MOVQ DX, X9
	PUNPCKLQDQ X9, X9 // 'a'-1
	MOVQ $0x7b7b7b7b7b7b7b7b, DX
	MOVQ DX, X10
	PUNPCKLQDQ X10, X10 // 'z'+1
	MOVQ $0x2e2e2e2e2e2e2e2e, DX
	MOVQ DX, X11
	PUNPCKLQDQ X11, X11 // '/'-1
	MOVQ $0x3a3a3a3a3a3a3a3a, DX
	MOVQ DX, X12
	PUNPCKLQDQ X12, X12 // '9'+1
	MOVQ $0x2b2b2b2b2b2b2b2b, DX
	MOVQ DX, X13
	PUNPCKLQDQ X13, X13 // '+'

loop:
	LEAQ 16(AX), DX
	CMPQ DX, CX
	JGT  done
	MOVOU (SI)(AX*1), X0
	MOVO  X0, X1
	POR   X8, X1     // y = c | 0x20
	MOVO  X1, X2
	PCMPGTB X9, X2   // y > 'a'-1
	MOVO  X10, X3
	PCMPGTB X1, X3   // 'z'+1 > y
	PAND  X3, X2     // a letter
	MOVO  X0, X4
	PCMPGTB X11, X4  // c > '/'-1
	MOVO  X12, X5
	PCMPGTB X0, X5   // '9'+1 > c
	PAND  X5, X4     // a slash or a digit
	POR   X4, X2
	MOVO  X0, X6
	PCMPEQB X13, X6  // '+'
	POR   X6, X2
	PMOVMSKB X2, DX
	CMPL  DX, $0xffff
	JNE   found
	ADDQ  $16, AX
	JMP   loop

found:
	NOTL DX
	BSFL DX, DX
	ADDQ DX, AX

done:
	MOVQ AX, ret+24(FP)
	RET
