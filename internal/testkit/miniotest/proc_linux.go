package miniotest

import (
	"os/exec"
	"syscall"
)

// setProcAttr puts MinIO in its own process group, so that Stop can kill
// anything it spawns, and has the kernel kill it if the test process dies
// without running its cleanups (a panic, a timeout, SIGKILL).
func setProcAttr(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// killProcess kills MinIO's whole process group.
func killProcess(cmd *exec.Cmd) {
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
}
