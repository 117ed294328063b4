//go:build unix

package broker

import "syscall"

// freeBytes is what an unprivileged writer may still put in dir's file
// system.
func freeBytes(dir string) (int64, bool) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, false
	}
	return int64(st.Bavail) * int64(st.Bsize), true
}
