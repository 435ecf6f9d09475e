//go:build !(386 || amd64 || arm || arm64 || loong64 || mips64le || mipsle || ppc64le || riscv64 || wasm)

package jsonscan

// bigEndian selects load8's byte swap.
const bigEndian = true
