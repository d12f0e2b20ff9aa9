//go:build !linux

package objectstore

import (
	"os"
	"path/filepath"
)

// syncFS makes files and their directories durable where there is no
// syncfs(2): an fsync each.
func syncFS(_ *os.File, files []string) error {
	dirs := make(map[string]bool)
	for _, p := range files {
		if err := syncPath(p); err != nil {
			return err
		}
		dirs[filepath.Dir(p)] = true
	}
	for dir := range dirs {
		if err := syncDir(dir); err != nil {
			return err
		}
	}
	return nil
}
