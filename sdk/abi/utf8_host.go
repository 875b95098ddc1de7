//go:build !wasip1

package abi

// checkUTF8: hosts decode untrusted guest output, so string fields must be
// valid UTF-8.
const checkUTF8 = true
