package objectstore

import "syscall"

// openDirectFlag is the open flag that makes writes bypass the page cache.
const openDirectFlag = syscall.O_DIRECT
