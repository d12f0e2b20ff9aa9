package tlsconfig

import (
	"bufio"
	"crypto/tls"
	"net"
	"sync"
)

// writeBufferBytes is the write buffer of a BufferedConn: a few TLS
// records (16 KiB each) per system call.
const writeBufferBytes = 64 << 10

// NewListener is tls.NewListener, with each accepted connection's TLS
// records written through a BufferedConn: a server that writes large
// responses turns its buffering on after the handshake (Buffer) and
// flushes after each response, so that a response costs a system call per
// 64 KiB rather than per 16 KiB record.
func NewListener(ln net.Listener, cfg *tls.Config) net.Listener {
	return &listener{Listener: ln, cfg: cfg}
}

type listener struct {
	net.Listener
	cfg *tls.Config
}

func (l *listener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return tls.Server(&BufferedConn{Conn: c}, l.cfg), nil
}

// BufferedConn is a connection whose writes are buffered once Buffer is
// called, until Flush (or Close). Before Buffer it writes through: the TLS
// handshake must reach the peer as it is written.
type BufferedConn struct {
	net.Conn
	mu sync.Mutex
	w  *bufio.Writer
}

// Buffer turns write buffering on.
func (c *BufferedConn) Buffer() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.w == nil {
		c.w = bufio.NewWriterSize(c.Conn, writeBufferBytes)
	}
}

func (c *BufferedConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.w == nil {
		return c.Conn.Write(p)
	}
	return c.w.Write(p)
}

// Flush writes what is buffered.
func (c *BufferedConn) Flush() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.w == nil {
		return nil
	}
	return c.w.Flush()
}

// Close flushes (a TLS close alert is the last write) and closes.
func (c *BufferedConn) Close() error {
	c.Flush()
	return c.Conn.Close()
}
