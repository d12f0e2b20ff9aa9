package objectstore

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// maxKeyLen is S3's limit on key length in bytes.
const maxKeyLen = 1024

// CheckKey reports whether key is one every backend can store under the
// same name: non-empty, valid UTF-8, at most 1024 bytes, '/'-separated
// segments that are neither empty nor "." nor "..", no leading '/', no
// backslash and no NUL. The same rules everywhere keep Memory, Dir and S3
// interchangeable and stop a key from escaping a Dir's root.
// Every backend checks the keys it is given; code that takes a key from the
// network (a peer's chunk request, package zone) checks it first. The error
// wraps ErrInvalidKey.
func CheckKey(key string) error {
	switch {
	case key == "":
		return fmt.Errorf("%w: empty", ErrInvalidKey)
	case len(key) > maxKeyLen:
		return fmt.Errorf("%w: %d bytes, longer than %d", ErrInvalidKey, len(key), maxKeyLen)
	case !utf8.ValidString(key):
		return fmt.Errorf("%w: %q is not valid UTF-8", ErrInvalidKey, key)
	case strings.ContainsAny(key, "\\\x00"):
		return fmt.Errorf("%w: %q contains a backslash or NUL", ErrInvalidKey, key)
	}
	for seg := range strings.SplitSeq(key, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return fmt.Errorf("%w: %q has an empty, \".\" or \"..\" segment", ErrInvalidKey, key)
		}
	}
	return nil
}

// checkRange validates GetRange's offset against an object of size bytes
// and returns how many bytes to read: length, clipped to the end of the
// object, or everything from offset when length < 0.
func checkRange(key string, size, offset, length int64) (int64, error) {
	if offset < 0 || offset > size {
		return 0, fmt.Errorf("get %s [%d, +%d) of %d bytes: %w", key, offset, length, size, ErrInvalidRange)
	}
	n := size - offset
	if length >= 0 && length < n {
		n = length
	}
	return n, nil
}
