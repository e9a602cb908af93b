// pause: the sandbox (infra) container of the real node's pods (hack/lib/real-node.ts). It holds the
// pod's namespaces open and, as PID 1 of the pod's shared PID namespace when one is used, reaps
// orphaned children. SIGINT and SIGTERM end it at once with status 0.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	signals := make(chan os.Signal, 8)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for s := range signals {
		if s != syscall.SIGCHLD {
			os.Exit(0)
		}
		for {
			pid, err := syscall.Wait4(-1, nil, syscall.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
		}
	}
}
