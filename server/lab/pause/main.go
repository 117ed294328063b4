// Command pause is the lab's pod sandbox process: it holds the pod's namespaces open,
// reaps whatever is re-parented to it, and exits on SIGINT or SIGTERM. It is built
// static (CGO_ENABLED=0) and packed into the localhost/pause:lab image by lab.sh.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	c := make(chan os.Signal, 1)
	signal.Notify(c, syscall.SIGINT, syscall.SIGTERM)
	// With SIGCHLD ignored the kernel reaps exited children itself.
	signal.Ignore(syscall.SIGCHLD)
	<-c
}
