package miniotest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
)

// binary caches the result of looking for the minio binary: the lookup
// runs `go env`, which is too slow to repeat for every test.
var binary struct {
	once sync.Once
	path string
	err  error
}

// findBinary returns the path of the minio binary to run, or an error
// saying where it looked.
func findBinary() (string, error) {
	binary.once.Do(func() { binary.path, binary.err = lookupBinary() })
	return binary.path, binary.err
}

// lookupBinary tries, in order: $FLOE_MINIO_BIN (which must exist when
// set), $(go env GOBIN)/minio, $(go env GOPATH)/bin/minio, the user cache
// directory's floe-gobin/minio, /root/.cache/floe-gobin/minio, and minio
// on PATH.
func lookupBinary() (string, error) {
	if p := os.Getenv("FLOE_MINIO_BIN"); p != "" {
		if !isExecutable(p) {
			return "", fmt.Errorf("FLOE_MINIO_BIN=%s is not an executable file", p)
		}
		return p, nil
	}
	var candidates []string
	if gobin, gopath := goEnv(); gobin != "" {
		candidates = append(candidates, filepath.Join(gobin, "minio"))
	} else if gopath != "" {
		first, _, _ := strings.Cut(gopath, string(os.PathListSeparator))
		candidates = append(candidates, filepath.Join(first, "bin", "minio"))
	}
	if cache, err := os.UserCacheDir(); err == nil {
		candidates = append(candidates, filepath.Join(cache, "floe-gobin", "minio"))
	}
	candidates = append(candidates, "/root/.cache/floe-gobin/minio")
	for _, p := range candidates {
		if isExecutable(p) {
			return p, nil
		}
	}
	if p, err := exec.LookPath("minio"); err == nil {
		return p, nil
	}
	return "", errors.New("no minio binary: set FLOE_MINIO_BIN, or run " +
		"`GOBIN=~/.cache/floe-gobin go install github.com/minio/minio@latest`; looked in " +
		strings.Join(candidates, ", ") + " and PATH")
}

// goEnv returns GOBIN and GOPATH, from the environment or `go env`.
func goEnv() (gobin, gopath string) {
	gobin, gopath = os.Getenv("GOBIN"), os.Getenv("GOPATH")
	if gobin != "" {
		return gobin, gopath
	}
	out, err := exec.Command("go", "env", "GOBIN", "GOPATH").Output()
	if err != nil {
		return "", gopath
	}
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	if len(lines) == 2 {
		gobin, gopath = strings.TrimSpace(lines[0]), strings.TrimSpace(lines[1])
	}
	return gobin, gopath
}

// isExecutable reports whether p is a regular file with an execute bit.
func isExecutable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}
