//go:build wasip1

package abi

// checkUTF8: guests decode frames from their host, which is trusted.
const checkUTF8 = false
