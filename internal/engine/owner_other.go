//go:build !unix

package engine

func processGone(int) bool { return false }

func pidNamespace() string { return "" }
