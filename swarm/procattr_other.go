//go:build !linux

// Elsewhere than Linux, the process and socket options are the system's defaults.

package swarm

import "syscall"

// childProcAttr is nil where there is no parent-death signal: a child orphaned there still stops at the
// run's timeout.
func childProcAttr() *syscall.SysProcAttr { return nil }

// bindNoPort is a Linux socket option; elsewhere the system's default binding stays.
func bindNoPort(_, _ string, _ syscall.RawConn) error { return nil }
