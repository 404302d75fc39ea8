//go:build unix && !linux

package benchkit

import "syscall"

// The BSDs and macOS report ru_maxrss in bytes.
func maxRSSKiB(ru *syscall.Rusage) int64 { return ru.Maxrss / 1024 }
