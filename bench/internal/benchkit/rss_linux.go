package benchkit

import "syscall"

// Linux reports ru_maxrss in KiB.
func maxRSSKiB(ru *syscall.Rusage) int64 { return ru.Maxrss }
