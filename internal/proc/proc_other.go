//go:build !linux

package proc

import (
	"errors"
	"time"
)

// StartTime is not known outside Linux.
func StartTime(int) (uint64, error) { return 0, errors.ErrUnsupported }

// BootID is not known outside Linux.
func BootID() string { return "" }

// Stop cannot tell a tool's group from a reused id outside Linux, so it
// kills nothing.
func Stop(int, uint64, string, time.Duration) (Report, error) {
	return Report{}, errors.ErrUnsupported
}

// Live cannot list a group's members outside Linux.
func Live(int) ([]int, error) { return nil, errors.ErrUnsupported }

// Subreaper is Linux's alone.
func Subreaper() error { return errors.ErrUnsupported }

// StopMarked cannot read other processes' environments outside Linux.
func StopMarked(string, time.Duration) (Report, error) { return Report{}, errors.ErrUnsupported }

// StopMarkedBelow cannot read other processes' environments outside Linux.
func StopMarkedBelow(int, string, time.Duration) (Report, error) {
	return Report{}, errors.ErrUnsupported
}
