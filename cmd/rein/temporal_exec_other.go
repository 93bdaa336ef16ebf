//go:build !unix

package main

import "errors"

// execTemporal cannot replace the process here: rein runs prog as its
// child (runTemporal).
func execTemporal(string, []string) error { return errors.ErrUnsupported }
