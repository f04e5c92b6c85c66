package cli

import (
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

// parallel runs every piece of work, and a panic in one reaches the caller's
// goroutine (and so Run's recover) once all have finished.
func TestParallelRaisesAPanicInTheCaller(t *testing.T) {
	var done atomic.Int32
	require.PanicsWithValue(t, "boom", func() {
		parallel(4, func(i int) {
			if i == 2 {
				panic("boom")
			}
			done.Add(1)
		})
	})
	require.Equal(t, int32(3), done.Load(), "the other pieces ran to their end")

	var ran [5]bool
	parallel(5, func(i int) { ran[i] = true })
	require.Equal(t, [5]bool{true, true, true, true, true}, ran)
}
