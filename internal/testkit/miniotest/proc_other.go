//go:build !linux

package miniotest

import "os/exec"

// setProcAttr does nothing outside Linux: there is no portable way to tie
// the child's life to ours.
func setProcAttr(cmd *exec.Cmd) {}

// killProcess kills MinIO.
func killProcess(cmd *exec.Cmd) {
	_ = cmd.Process.Kill()
}
