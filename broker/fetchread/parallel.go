package fetchread

import (
	"sync"
	"sync/atomic"
)

// parallel calls fn(0), ..., fn(n-1) on up to limit goroutines at once
// (limit < 1 counts as 1), and returns when all have returned. With one
// call or a limit of 1 they run on the calling goroutine, in order.
func parallel(n, limit int, fn func(i int)) {
	if n <= 1 || limit <= 1 {
		for i := range n {
			fn(i)
		}
		return
	}
	var (
		next atomic.Int64
		wg   sync.WaitGroup
	)
	for range min(n, limit) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				fn(i)
			}
		}()
	}
	wg.Wait()
}
