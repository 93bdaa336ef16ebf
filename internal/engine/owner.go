package engine

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/google/uuid"
)

// NewOwner returns a lease owner naming this process: host/pid/random, and
// on Linux /pidns:INODE, the process's PID namespace. A lease held by an
// owner of this host and namespace whose process no longer runs is taken
// over at once by Resume and Cancel (it would otherwise block them until
// it expires); any other lease must expire.
func NewOwner() string {
	host, _ := os.Hostname()
	owner := fmt.Sprintf("%s/%d/%s", host, os.Getpid(), uuid.NewString()[:8])
	if ns := pidNamespace(); ns != "" {
		owner += "/pidns:" + ns
	}
	return owner
}

// ownerGone reports whether owner, as NewOwner writes it, is a process of
// this host and PID namespace that no longer runs. Anything else — another
// host, another namespace, a format it does not know, a process that runs
// (or a PID reused since) — is not gone.
func ownerGone(owner string) bool {
	pid, ok := localPID(owner)
	return ok && pid != os.Getpid() && processGone(pid)
}

// localPID returns the PID of owner, as NewOwner writes it, when it is a
// process of this host and PID namespace; ok is false for anything else.
func localPID(owner string) (pid int, ok bool) {
	parts := strings.Split(owner, "/")
	if len(parts) != 4 || !strings.HasPrefix(parts[3], "pidns:") {
		return 0, false
	}
	host, _ := os.Hostname()
	ns := pidNamespace()
	if host == "" || parts[0] != host || ns == "" || parts[3] != "pidns:"+ns {
		return 0, false
	}
	pid, err := strconv.Atoi(parts[1])
	if err != nil || pid <= 0 {
		return 0, false
	}
	return pid, true
}
