package lock

import (
	"fmt"
	"os"
)

// Holder is who holds a lock, as fields: the user the API server knows,
// and the process. The lease names it as String formats it, once, where
// it is written; nothing parses it back (a release's author is User).
type Holder struct {
	User string
	PID  int
	Host string
	// What says what the holder does, when it is not a change of its
	// own: "moving units off node n1".
	What string
}

// Self is this process, holding a lock for user.
func Self(user string) Holder {
	host, _ := os.Hostname()
	return Holder{User: user, PID: os.Getpid(), Host: host}
}

// String is the holder as a lease names it and people read it: "alice
// (pid 4242 on laptop)", then What.
func (h Holder) String() string {
	s := h.User
	if h.PID != 0 || h.Host != "" {
		s = fmt.Sprintf("%s (pid %d on %s)", h.User, h.PID, h.Host)
	}
	if h.What != "" {
		s += " " + h.What
	}
	return s
}
