package swarm

import "syscall"

// childProcAttr makes a child die with its parent: a parent killed outright cannot stop its children
// otherwise. (Linux sends the signal when the thread that started the child ends; Go ends a thread only
// when a goroutine locked to it exits, which nothing here does.)
func childProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
