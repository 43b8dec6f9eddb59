//go:build !linux

package segment

// reserveArena gives the block cache n bytes of the Go heap where no
// reservation outside it is made (see arena_linux.go). The heap's fresh
// memory is committed as it is first written, as a mapping's is.
func reserveArena(n int) (mem []byte, release func(), err error) {
	return make([]byte, n), func() {}, nil
}
