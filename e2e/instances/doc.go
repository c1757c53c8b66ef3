// Package instances runs three processes of the built server binary (apptest.Build, StartProcess) on
// one real Redis and PostgreSQL with virtual users spread over them, and holds the run to what several
// instances promise: one line whose every tick runs once and reaches every socket with its true rank, a
// pass for each admitted socket whichever instance admitted it, users who keep their place when their
// instance is killed or drained, and each seat sold once.
package instances
