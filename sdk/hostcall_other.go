//go:build !wasip1

package sdk

func wasmHost() hostABI { return noHost{} }
