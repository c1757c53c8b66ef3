//go:build !linux

package swarm

import "syscall"

// childProcAttr is nil where there is no parent-death signal: a child orphaned there still stops at the
// run's timeout.
func childProcAttr() *syscall.SysProcAttr { return nil }
