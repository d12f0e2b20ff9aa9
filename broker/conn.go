package broker

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-io/floe/ingest"
	"go.opentelemetry.io/otel/trace"
)

// writeTimeout bounds writing one response to a slow or dead client.
const writeTimeout = 60 * time.Second

// request is one decoded Kafka request.
type request struct {
	key      int16
	version  int16
	corr     int32
	clientID *string
	req      kmsg.Request
	conn     *conn
	// closeAfter is set by a handler whose answer must be the connection's
	// last (a failed SASL exchange).
	closeAfter bool
	// span is the request's span when it is traced (tracing.go), else nil.
	span trace.Span
	// bufs are buffers of the answer, from the broker's bufPool, that the
	// write loop gives back once the answer is encoded (a fetch's records).
	bufs [][]byte
	// frame is the request's own frame, which the request's fields alias,
	// given back to the pool once the answer is written (or, with none,
	// once the request is served): only for the keys of recycledFrame.
	frame []byte
}

// recycledFrame reports whether the frame of a request of key goes back to
// the pool once it is answered: Produce and Fetch, the requests of every
// client's steady state, whose handlers keep nothing of the frame past the
// answer (a produce's batches and keys are copied into the ingester's
// object and the keys' arena). Other requests' fields may be kept (a group
// member's metadata, SASL bytes): their frames are left to the collector.
//
// Frames under minPooledFrame are made to measure: most are of other keys
// (heartbeats, offset commits), and a pool buffer is 4 KiB at least.
func recycledFrame(key int16) bool {
	return key == int16(kmsg.Produce) || key == int16(kmsg.Fetch)
}

// inflight is a request being served; responses leave in request order.
type inflight struct {
	corr     int32
	key      int16
	version  int16
	flexible bool
	start    time.Time
	done     chan struct{}
	resp     kmsg.Response
	err      error
	// req is the request answered, nil for answers the read loop makes
	// itself.
	req *request
	// raw, when set, is sent alone with its length and no response header:
	// a step of an unframed SASL exchange (SaslHandshake v0).
	raw []byte
	// wait, set by a staged handler's first step before done is closed,
	// is its second step: the write loop calls it for the response.
	wait func() (kmsg.Response, error)
}

// conn serves one client connection: a read loop decodes requests and starts
// their handlers concurrently; a write loop sends the responses strictly in
// request order, as the protocol requires.
type conn struct {
	b  *Broker
	nc net.Conn
	// src is the connection's number, its produces' ingest.Source.
	src ingest.Source
	// rd reads nc: a request's size and a small request's body come in one
	// read(2), not one each (a few microseconds apiece on a quiet broker,
	// before the produce's commit starts). Every read of nc goes through it.
	rd     *bufio.Reader
	ctx    context.Context
	cancel context.CancelFunc

	pending   chan *inflight
	closeOnce sync.Once
	// draining is closed when the broker drains: parked fetches answer at
	// once and no new request is read.
	draining  chan struct{}
	drainOnce sync.Once
	// fetches counts the connection's fetches, to rotate where each one
	// starts spending its byte budget.
	fetches atomic.Uint32
	// zone is the client's zone as far as the connection learned it
	// (zones.go).
	zone connZone
	// flush writes out what a buffering connection holds (TLS records),
	// nil when writes go straight out.
	flush func() error
	// auth is the connection's SASL state (sasl.go).
	auth connAuth
	// authPrincipal is the principal the connection authenticated as
	// (principal.go); nil until it does.
	authPrincipal atomic.Pointer[string]
	// host is the client's IP address (clientHost).
	host string
}

// connReadBuffer is the size of a connection's read buffer: a small
// request fits whole; a larger one's body is read straight into its own
// buffer past the first connReadBuffer bytes.
const connReadBuffer = 8 << 10

func newConn(b *Broker, nc net.Conn) *conn {
	ctx, cancel := context.WithCancel(context.Background())
	return &conn{
		b:        b,
		nc:       nc,
		src:      ingest.Source(b.conns.Add(1)),
		rd:       bufio.NewReaderSize(nc, connReadBuffer),
		ctx:      ctx,
		cancel:   cancel,
		pending:  make(chan *inflight, b.opts.MaxInflight),
		draining: make(chan struct{}),
		host:     remoteHost(nc),
	}
}

func (c *conn) close() {
	c.closeOnce.Do(func() {
		c.cancel()
		c.nc.Close()
	})
}

// writeBuffer is a connection under TLS that buffers its writes until
// flushed (tlsconfig.BufferedConn).
type writeBuffer interface {
	Buffer()
	Flush() error
}

// tlsHandshakeTimeout bounds a TLS client's handshake.
const tlsHandshakeTimeout = 10 * time.Second

func (c *conn) serve() {
	if tc, ok := c.nc.(*tls.Conn); ok {
		ctx, cancel := context.WithTimeout(c.ctx, tlsHandshakeTimeout)
		err := tc.HandshakeContext(ctx)
		cancel()
		if err != nil {
			c.b.log.Debug("tls handshake failed", "remote", c.nc.RemoteAddr(), "err", err)
			c.b.metrics.authFailed("TLS")
			c.close()
			return
		}
		if certs := tc.ConnectionState().PeerCertificates; len(certs) > 0 && c.b.opts.ClientCertPrincipal != nil {
			c.setPrincipal(c.b.opts.ClientCertPrincipal(certs[0]))
		}
		// A connection that buffers its TLS records (tlsconfig.NewListener)
		// is flushed after each response.
		if bc, ok := tc.NetConn().(writeBuffer); ok {
			bc.Buffer()
			c.flush = bc.Flush
		}
	}
	writeDone := make(chan struct{})
	go func() {
		defer close(writeDone)
		c.writeLoop()
	}()
	err := c.readLoop()
	close(c.pending)
	var pe *protocolError
	switch {
	case errors.As(err, &pe):
		// A malformed or oversized frame closes this connection at once.
		c.b.log.Debug("closing connection", "remote", c.nc.RemoteAddr(), "err", err)
		c.close()
	case c.isDraining():
		// A drain's read deadline: the answers already being served are
		// still sent.
	default:
		// The client went away: nobody reads the answers, stop serving.
		c.close()
	}
	<-writeDone
	c.close()
	c.b.shareConnClosed(c)
}

// drain stops reading new requests; the connection closes once the
// requests already read are answered.
func (c *conn) drain() {
	c.drainOnce.Do(func() { close(c.draining) })
	c.nc.SetReadDeadline(time.Now())
}

func (c *conn) isDraining() bool {
	select {
	case <-c.draining:
		return true
	default:
		return false
	}
}

// protocolError is a request the connection cannot survive.
type protocolError struct{ err error }

func (e *protocolError) Error() string { return e.err.Error() }
func (e *protocolError) Unwrap() error { return e.err }

func (c *conn) readLoop() error {
	var sizeBuf [4]byte
	// raw is set after a SaslHandshake v0 for a served mechanism: the
	// exchange's messages follow unframed.
	raw := false
	for {
		if _, err := io.ReadFull(c.rd, sizeBuf[:]); err != nil {
			return err
		}
		size := int32(binary.BigEndian.Uint32(sizeBuf[:]))
		if raw {
			var err error
			if raw, err = c.readRawSASL(size); err != nil {
				return err
			}
			continue
		}
		if size < 8 || size > c.b.opts.MaxRequestBytes {
			return &protocolError{fmt.Errorf("request frame of %d bytes out of bounds [8, %d]", size, c.b.opts.MaxRequestBytes)}
		}
		var buf []byte
		if size >= minPooledFrame {
			buf = c.b.bufs.Get(int(size))
		} else {
			buf = make([]byte, size)
		}
		if _, err := io.ReadFull(c.rd, buf); err != nil {
			return err
		}
		r, a, err := parseRequest(buf)
		if err != nil {
			var uv *unsupportedVersionError
			if errors.As(err, &uv) && uv.key == int16(kmsg.ApiVersions) {
				inf := &inflight{corr: uv.corr, key: uv.key, start: time.Now(), done: make(chan struct{}), resp: unsupportedAPIVersions()}
				close(inf.done)
				c.pending <- inf
				continue
			}
			return &protocolError{err}
		}
		if c.b.apiHidden(r.key) {
			// As a key this broker does not serve: Kafka closes the
			// connection of a client that sends a disabled API.
			return &protocolError{fmt.Errorf("%s: %w", kmsg.NameForKey(r.key), errAPIDisabled)}
		}
		if !c.admitted(r.key, time.Now()) {
			// Kafka closes such a connection without an answer.
			return &protocolError{fmt.Errorf("%s before SASL authentication (or after its session expired)", kmsg.NameForKey(r.key))}
		}
		r.conn = c
		if recycledFrame(r.key) {
			r.frame = buf
		}
		if c.b.testPrincipal != nil && r.clientID != nil {
			c.setPrincipal(c.b.testPrincipal(*r.clientID))
		}
		if hs, ok := r.req.(*kmsg.SASLHandshakeRequest); ok && r.version == 0 && c.b.saslEnabled() && c.b.supportsMechanism(hs.Mechanism) {
			raw = true
		}
		c.start(r, a)
	}
}

// start queues r for an in-order answer and begins serving it.
func (c *conn) start(r *request, a *api) {
	inf := &inflight{
		corr:     r.corr,
		key:      r.key,
		version:  r.version,
		flexible: r.req.IsFlexible(),
		start:    time.Now(),
		done:     make(chan struct{}),
		req:      r,
	}
	ctx := c.ctx
	if c.b.opts.Tracer != nil {
		ctx = c.b.startRequestSpan(ctx, r)
	}
	if a.staged != nil {
		// The second step runs on the write loop, which waits for the
		// answer in order anyway: a goroutine of its own would be one more
		// hand-off on a produce's path. The write loop is woken only once
		// the first step has handed its work on (a produce's batches to
		// the ingester): waking it costs the read loop a few tens of
		// microseconds on a quiet machine, which would otherwise come
		// before the commit starts.
		inf.wait, inf.err = serveSafely(r, func() (func() (kmsg.Response, error), error) {
			return a.staged(c.b, ctx, r), nil
		})
		close(inf.done)
		c.pending <- inf // blocks at MaxInflight: back-pressure on the client
		return
	}
	c.pending <- inf // blocks at MaxInflight: back-pressure on the client
	go func() {
		defer close(inf.done)
		inf.resp, inf.err = serveSafely(r, func() (kmsg.Response, error) { return a.fn(c.b, ctx, r) })
	}()
}

// serveSafely calls fn, a step of serving r, turning a panic into a
// connection error.
func serveSafely[T any](r *request, fn func() (T, error)) (v T, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic serving %s: %v\n%s", kmsg.NameForKey(r.key), p, debug.Stack())
		}
	}()
	return fn()
}

func (c *conn) writeLoop() {
	var buf []byte
	for inf := range c.pending {
		<-inf.done
		if inf.wait != nil && inf.err == nil {
			inf.resp, inf.err = serveSafely(inf.req, inf.wait)
		}
		traced := inf.req != nil && inf.req.span != nil
		if inf.err != nil {
			if traced {
				endRequest(inf.req, nil, inf.err)
			}
			c.b.log.Warn("closing connection", "remote", c.nc.RemoteAddr(), "api", kmsg.NameForKey(inf.key), "err", inf.err)
			c.close()
			for range c.pending { // drain so the read loop is not stuck
			}
			return
		}
		if inf.resp == nil && inf.raw == nil {
			if traced {
				endRequest(inf.req, nil, nil)
			}
			c.b.metrics.request(inf.key, inf.start)
			c.releaseFrame(inf.req)
			continue
		}
		var answer trace.Span
		if traced {
			answer = c.b.startAnswer(inf.req)
		}
		out, pooled := buf, false
		if inf.raw != nil {
			buf = binary.BigEndian.AppendUint32(buf[:0], uint32(len(inf.raw)))
			buf = append(buf, inf.raw...)
			out = buf
		} else if n := responseSizeHint(inf.resp); n > maxKeptWriteBuf {
			// A large fetch answer: its frame comes from the pool, not kept
			// by the connection between answers.
			out, pooled = appendResponse(c.b.bufs.Get(n)[:0], inf), true
		} else {
			if cap(buf) < n {
				buf = make([]byte, 0, n)
			}
			buf = appendResponse(buf[:0], inf)
			out = buf
		}
		if inf.req != nil {
			// Encoded: the answer's own buffers are copied into the frame.
			for _, b := range inf.req.bufs {
				c.b.bufs.Put(b)
			}
			inf.req.bufs = nil
		}
		c.nc.SetWriteDeadline(time.Now().Add(writeTimeout))
		_, err := c.nc.Write(out)
		if pooled {
			c.b.bufs.Put(out)
		} else if cap(buf) > maxKeptWriteBuf {
			buf = nil // grown past its hint: not kept either
		}
		c.releaseFrame(inf.req)
		if err == nil && c.flush != nil {
			err = c.flush()
		}
		if traced {
			endRequest(inf.req, answer, err)
		}
		if err != nil {
			c.close()
			for range c.pending {
			}
			return
		}
		c.b.metrics.request(inf.key, inf.start)
		if inf.req != nil && inf.req.closeAfter {
			c.close()
			for range c.pending {
			}
			return
		}
	}
}

// releaseFrame gives r's frame back to the pool, once r is answered.
func (c *conn) releaseFrame(r *request) {
	if r != nil && r.frame != nil {
		c.b.bufs.Put(r.frame)
		r.frame = nil
	}
}

// readRawSASL serves one unframed step of a SaslHandshake v0 exchange, of
// size bytes, and reports whether more steps follow. A failed exchange is
// an error: v0 has no way to say why, so the connection closes.
func (c *conn) readRawSASL(size int32) (more bool, err error) {
	if size < 0 || size > maxRawSASLBytes {
		return false, &protocolError{fmt.Errorf("unframed SASL message of %d bytes out of bounds [0, %d]", size, maxRawSASLBytes)}
	}
	msg := make([]byte, size)
	if _, err := io.ReadFull(c.rd, msg); err != nil {
		return false, err
	}
	ctx, cancel := context.WithTimeout(c.ctx, rawSASLTimeout)
	defer cancel()
	out, _, done, err := c.stepSASL(ctx, msg)
	if err != nil {
		return false, &protocolError{fmt.Errorf("sasl (handshake v0): %w", err)}
	}
	inf := &inflight{key: int16(kmsg.SASLAuthenticate), start: time.Now(), done: make(chan struct{}), raw: append([]byte{}, out...)}
	close(inf.done)
	c.pending <- inf
	return !done, nil
}

// Bounds of an unframed SASL step.
const (
	maxRawSASLBytes = 1 << 16
	rawSASLTimeout  = 10 * time.Second
)

// maxKeptWriteBuf bounds the frame buffer a connection keeps between
// answers: a larger answer (a fetch's) is encoded into a buffer of the
// broker's pool, so that idle connections do not each pin their largest.
const maxKeptWriteBuf = 1 << 20

// minPooledFrame is the smallest request frame read into a pool buffer.
const minPooledFrame = 1 << 10

// responseSizeHint is about the framed size of resp when it is large: a
// Fetch response's record batches and a bound on what surrounds them, so
// that writeLoop allocates its buffer once instead of growing it by
// doubling (which copied a large fetch response about twice more, 16% of
// the broker's CPU with one consumer at 57 MiB/s). 0 for other responses.
func responseSizeHint(resp kmsg.Response) int {
	f, ok := resp.(*kmsg.FetchResponse)
	if !ok {
		return 0
	}
	n := 64
	for i := range f.Topics {
		t := &f.Topics[i]
		n += 32 + len(t.Topic)
		for j := range t.Partitions {
			p := &t.Partitions[j]
			n += 64 + len(p.RecordBatches) + 24*len(p.AbortedTransactions)
		}
	}
	return n
}

// appendResponse frames resp: size, correlation id, header tags for
// flexible versions (never for ApiVersions, whose response header is v0).
func appendResponse(dst []byte, inf *inflight) []byte {
	dst = append(dst, 0, 0, 0, 0)
	dst = binary.BigEndian.AppendUint32(dst, uint32(inf.corr))
	if inf.flexible && inf.key != int16(kmsg.ApiVersions) {
		dst = append(dst, 0)
	}
	inf.resp.SetVersion(inf.version)
	dst = inf.resp.AppendTo(dst)
	binary.BigEndian.PutUint32(dst, uint32(len(dst)-4))
	return dst
}

type unsupportedVersionError struct {
	key, version int16
	corr         int32
}

func (e *unsupportedVersionError) Error() string {
	return fmt.Sprintf("unsupported version %d of %s", e.version, kmsg.NameForKey(e.key))
}

// parseRequest decodes one request frame (without its size prefix). The
// request may alias buf.
func parseRequest(buf []byte) (*request, *api, error) {
	rd := kbin.Reader{Src: buf}
	key := rd.Int16()
	version := rd.Int16()
	corr := rd.Int32()
	clientID := rd.NullableString()
	if err := rd.Complete(); err != nil {
		return nil, nil, fmt.Errorf("request header: %w", err)
	}
	a := lookupAPI(key)
	if a == nil {
		return nil, nil, fmt.Errorf("unsupported api key %d", key)
	}
	if version < a.min || version > a.max {
		return nil, nil, &unsupportedVersionError{key: key, version: version, corr: corr}
	}
	req := kmsg.RequestForKey(key)
	req.SetVersion(version)
	if req.IsFlexible() {
		for n := rd.Uvarint(); n > 0 && rd.Ok(); n-- {
			rd.Uvarint()
			rd.Span(int(rd.Uvarint()))
		}
		if !rd.Ok() {
			return nil, nil, errors.New("request header tags: truncated")
		}
	}
	body := rd.Src
	var err error
	if u, ok := req.(kmsg.UnsafeReadFrom); ok {
		err = u.UnsafeReadFrom(body)
	} else {
		err = req.ReadFrom(body)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("decode %s v%d: %w", kmsg.NameForKey(key), version, err)
	}
	return &request{key: key, version: version, corr: corr, clientID: clientID, req: req}, a, nil
}
