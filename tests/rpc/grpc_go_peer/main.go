// SPDX-License-Identifier: Apache-2.0

// grpc_go_peer is a gRPC server on grpc-go (Debian golang-google-grpc-dev,
// the reference implementation, nobody here wrote it), serving the service
// peer.Test on raw bytes (a pass-through codec, no generated code) on
// 127.0.0.1, plain text or TLS. tests/rpc/grpc_go_peer_test.cc starts it, as
// grpcio_peer_test.cc starts grpcio_peer.py, and the two read alike.
//
//	grpc_go_peer [--cert=chain.pem --key=key.pem]
//	             [--answers=UNAVAILABLE,RESOURCE_EXHAUSTED:2000,OK]
//	             [--max-connection-age=50ms [--max-connection-age-grace=1m]]
//	             [--max-concurrent-streams=n]
//	             [--max-receive-message-size=bytes] [--initial-window-size=bytes]
//	             [--compress-all]
//
// The options are grpc-go's own server options: keepalive.ServerParameters'
// MaxConnectionAge (its GOAWAYs: first one with a PING, then the final one
// once the PING is answered) and MaxConnectionAgeGrace (then the connection
// is closed, calls or not), MaxConcurrentStreams, MaxRecvMsgSize,
// InitialWindowSize and InitialConnWindowSize (a fixed window and no BDP
// PINGs: at 64 KiB, grpc-go sends a WINDOW_UPDATE for the stream and one
// for the connection for each 16 KiB it reads), and RPCCompressor (every
// answer gzip-coded). Its PING policy is always on, as grpc-go's is by
// default: keepalive.EnforcementPolicy{MinTime: 5 min}. A PING sooner than
// MinTime after the last, with no HEADERS or DATA written since, is a
// strike; the third closes the connection with GOAWAY ENHANCE_YOUR_CALM
// "too_many_pings".
//
// Methods (each message is raw bytes):
//
//	Echo     unary: answers the request; its custom metadata (names starting
//	         "x-", "-bin" values as bytes) comes back in the trailers, and
//	         the initial metadata is x-served-by: grpc-go and x-served-bin:
//	         the bytes 00 ff. A gzip-coded request is answered gzip-coded:
//	         grpc-go answers in the request's encoding.
//	Fail     unary: the request is "CODE message": that status, that message.
//	Flaky    unary: call n gets answers[n-1] (the last one repeats): a status
//	         code name, with grpc-retry-pushback-ms after a colon; OK echoes.
//	Deadline unary: the milliseconds the call's deadline (grpc-timeout) left
//	         when it arrived, in decimal, or "none".
//	Hang     unary: never answers; counts the call cancelled once the client
//	         leaves it.
//	Gate     unary: the request is a decimal n; answers once n Gate calls
//	         wait at once, so n calls must be in flight together.
//	Count    server streaming: the request is a decimal n; messages "1".."n".
//	Join     client streaming: every message, joined with '+'; the initial
//	         metadata is x-served-by: grpc-go.
//	Drain    client streaming: reads every message and answers the bytes
//	         they held, in decimal; sends nothing before.
//	Chat     bidirectional: each message back, prefixed "echo:"; counts the
//	         call cancelled when the client cancels it.
//
// Every call's x-call-id metadata, when it has one, is recorded with the
// connection it came on, so a test can tell a call received twice.
//
// Control channel, as grpcio_peer.py has it: the first line on stdout is
// {"port": n}; each "stats" line on stdin is answered with one line
//
//	{"calls": {method: n}, "cancelled": n, "last_metadata": {...},
//	 "call_ids": {id: [connection, ...]},
//	 "connections": [{"id": n, "streams": n, "in_flight": n,
//	                  "max_in_flight": n, "pings": n, "max_quiet_pings": n,
//	                  "refused": n, "goaways": [{"last_stream_id": n,
//	                  "code": n, "debug": "..."}],
//	                  "streams_after_goaway": n, "max_quiet_frames": n}]}
//
// where a connection's frames are read off the wire in plain text (over TLS
// only its calls are counted): streams the client opened, PINGs it sent
// (not its acknowledgements) and the most it sent in a row while the server
// wrote no HEADERS or DATA, streams the server refused (RST_STREAM
// REFUSED_STREAM), its GOAWAY frames, and the streams the client opened
// after it had answered the PING that follows a graceful GOAWAY (so after
// it had read the GOAWAY, which forbids them), and the most frames the
// server wrote in a row with no HEADERS or DATA. The server stops when
// stdin ends.
package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/encoding"
	_ "google.golang.org/grpc/encoding/gzip" // takes and answers grpc-encoding: gzip
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
)

const service = "peer.Test"

// A safety net for a broken test: a handler that waits for the client
// (Hang, Gate) gives up after this, so the server never holds a call
// forever.
const safetyNet = time.Minute

// rawCodec passes serialised messages through under the name "proto", the
// codec a call with content-type application/grpc asks for: a message is
// a []byte, received into a *[]byte.
type rawCodec struct{}

func (rawCodec) Marshal(v interface{}) ([]byte, error) { return v.([]byte), nil }
func (rawCodec) Unmarshal(data []byte, v interface{}) error {
	*(v.(*[]byte)) = append([]byte(nil), data...)
	return nil
}
func (rawCodec) Name() string { return "proto" }

// connection is what the server saw of one accepted connection.
type connection struct {
	ID            int      `json:"id"`
	Streams       int      `json:"streams"`
	InFlight      int      `json:"in_flight"`
	MaxInFlight   int      `json:"max_in_flight"`
	Pings         int      `json:"pings"`
	MaxQuietPings int      `json:"max_quiet_pings"`
	Refused       int      `json:"refused"`
	Goaways       []goaway `json:"goaways"`
	// Streams the client opened after it acknowledged the PING of a
	// graceful GOAWAY, so after it had read that GOAWAY.
	StreamsAfterGoaway int `json:"streams_after_goaway"`
	// The most frames the server wrote in a row with no HEADERS or DATA
	// among them (WINDOW_UPDATE, PING, SETTINGS...).
	MaxQuietFrames     int  `json:"max_quiet_frames"`
	quietFrames        int  // frames since the server last wrote HEADERS or DATA
	quietPings         int  // PINGs since the server last wrote HEADERS or DATA
	goawayAcknowledged bool // the client answered the PING of a graceful GOAWAY
}

type goaway struct {
	LastStreamID uint32 `json:"last_stream_id"`
	Code         uint32 `json:"code"`
	Debug        string `json:"debug"`
}

// board holds everything the control channel reports, under one lock.
type board struct {
	mu           sync.Mutex
	calls        map[string]int
	cancelled    int
	lastMetadata map[string]string
	callIDs      map[string][]int
	connections  []*connection
	byAddr       map[string]*connection
	gate         chan struct{} // closed when enough Gate calls wait
	gateWaiting  int
}

var seen = &board{
	calls:        map[string]int{},
	lastMetadata: map[string]string{},
	callIDs:      map[string][]int{},
	connections:  []*connection{},
	byAddr:       map[string]*connection{},
	gate:         make(chan struct{}),
}

func (b *board) accepted(addr string) *connection {
	b.mu.Lock()
	defer b.mu.Unlock()
	c := &connection{ID: len(b.connections) + 1, Goaways: []goaway{}}
	b.connections = append(b.connections, c)
	b.byAddr[addr] = c
	return c
}

// call records a call of `method`: its metadata, its x-call-id, its
// connection, and one more in flight there until the returned function
// runs. Returns the call's number among those of `method`.
func (b *board) call(ctx context.Context, method string) (int, func()) {
	md, _ := metadata.FromIncomingContext(ctx)
	b.mu.Lock()
	defer b.mu.Unlock()
	b.calls[method]++
	b.lastMetadata = map[string]string{}
	for name, values := range md {
		value := strings.Join(values, ",")
		if strings.HasSuffix(name, "-bin") {
			value = hex.EncodeToString([]byte(value)) // grpc-go decoded it
		}
		b.lastMetadata[name] = value
	}
	var conn *connection
	if p, ok := peer.FromContext(ctx); ok {
		conn = b.byAddr[p.Addr.String()]
	}
	connID := 0
	if conn != nil {
		connID = conn.ID
		conn.InFlight++
		if conn.InFlight > conn.MaxInFlight {
			conn.MaxInFlight = conn.InFlight
		}
	}
	if ids := md.Get("x-call-id"); len(ids) > 0 {
		b.callIDs[ids[0]] = append(b.callIDs[ids[0]], connID)
	}
	return b.calls[method], func() {
		if conn != nil {
			b.mu.Lock()
			conn.InFlight--
			b.mu.Unlock()
		}
	}
}

func (b *board) countCancelled() {
	b.mu.Lock()
	b.cancelled++
	b.mu.Unlock()
}

func (b *board) report() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	out, err := json.Marshal(map[string]interface{}{
		"calls":         b.calls,
		"cancelled":     b.cancelled,
		"last_metadata": b.lastMetadata,
		"call_ids":      b.callIDs,
		"connections":   b.connections,
	})
	if err != nil {
		out, _ = json.Marshal(map[string]string{"error": err.Error()})
	}
	return out
}

// passGate waits until n Gate calls wait at once (each group of n leaves
// together), or the safety net.
func (b *board) passGate(n int) bool {
	b.mu.Lock()
	open := b.gate
	b.gateWaiting++
	if b.gateWaiting >= n {
		close(open)
		b.gate = make(chan struct{})
		b.gateWaiting = 0
	}
	b.mu.Unlock()
	select {
	case <-open:
		return true
	case <-time.After(safetyNet):
		return false
	}
}

// frames splits one direction of an HTTP/2 connection into frames, handing
// each to onFrame; the client's direction starts with the 24-byte preface.
type frames struct {
	skip    int
	buf     []byte
	onFrame func(kind, flags byte, payload []byte)
}

func (f *frames) feed(b []byte) {
	if f.skip > 0 {
		n := f.skip
		if n > len(b) {
			n = len(b)
		}
		f.skip -= n
		b = b[n:]
	}
	f.buf = append(f.buf, b...)
	used := 0
	for len(f.buf)-used >= 9 {
		head := f.buf[used:]
		length := int(head[0])<<16 | int(head[1])<<8 | int(head[2])
		if len(head) < 9+length {
			break
		}
		f.onFrame(head[3], head[4], head[9:9+length])
		used += 9 + length
	}
	f.buf = f.buf[:copy(f.buf, f.buf[used:])]
}

const (
	frameData      = 0x0
	frameHeaders   = 0x1
	frameRstStream = 0x3
	framePing      = 0x6
	frameGoaway    = 0x7
	flagAck        = 0x1
	refusedStream  = 0x7
	// The payload of the PING grpc-go sends after its first GOAWAY of a
	// graceful close (internal/transport's goAwayPing).
	goawayPing = "\x01\x06\x01\x08\x00\x03\x03\x09"
)

// sniffedConn reads the frames of a plain-text connection as they pass:
// the client's as grpc-go reads them, the server's before grpc-go writes
// them (so a client's PING sent after a server's DATA is never counted as
// one sent while the server wrote nothing).
type sniffedConn struct {
	net.Conn
	in, out frames
}

func sniff(c net.Conn, conn *connection) net.Conn {
	s := &sniffedConn{Conn: c}
	s.in = frames{skip: len("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"), onFrame: func(kind, flags byte, payload []byte) {
		seen.mu.Lock()
		defer seen.mu.Unlock()
		switch {
		case kind == frameHeaders:
			conn.Streams++ // a gRPC client sends no trailers: each HEADERS opens a stream
			if conn.goawayAcknowledged {
				conn.StreamsAfterGoaway++
			}
		case kind == framePing && flags&flagAck != 0:
			if string(payload) == goawayPing {
				conn.goawayAcknowledged = true
			}
		case kind == framePing:
			conn.Pings++
			conn.quietPings++
			if conn.quietPings > conn.MaxQuietPings {
				conn.MaxQuietPings = conn.quietPings
			}
		}
	}}
	s.out = frames{onFrame: func(kind, flags byte, payload []byte) {
		seen.mu.Lock()
		defer seen.mu.Unlock()
		if kind == frameHeaders || kind == frameData {
			conn.quietFrames = 0
		} else if conn.quietFrames++; conn.quietFrames > conn.MaxQuietFrames {
			conn.MaxQuietFrames = conn.quietFrames
		}
		switch {
		case kind == frameHeaders || kind == frameData:
			conn.quietPings = 0
		case kind == frameRstStream && len(payload) == 4 &&
			binary.BigEndian.Uint32(payload) == refusedStream:
			conn.Refused++
		case kind == frameGoaway && len(payload) >= 8:
			conn.Goaways = append(conn.Goaways, goaway{
				LastStreamID: binary.BigEndian.Uint32(payload) & 0x7fffffff,
				Code:         binary.BigEndian.Uint32(payload[4:]),
				Debug:        string(payload[8:]),
			})
		}
	}}
	return s
}

func (s *sniffedConn) Read(b []byte) (int, error) {
	n, err := s.Conn.Read(b)
	s.in.feed(b[:n])
	return n, err
}

func (s *sniffedConn) Write(b []byte) (int, error) {
	s.out.feed(b)
	return s.Conn.Write(b)
}

// watchedListener gives each connection its record, and in plain text
// reads its frames.
type watchedListener struct {
	net.Listener
	plainText bool
}

func (l watchedListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	conn := seen.accepted(c.RemoteAddr().String())
	if !l.plainText {
		return c, nil
	}
	return sniff(c, conn), nil
}

// answers is --answers: what Flaky's calls get, in turn.
var answers []string

// unaryHandler answers a unary call's request; number is the call's among
// those of its method, from 1.
type unaryHandler func(ctx context.Context, request []byte, number int) ([]byte, error)

func unary(name string, handle unaryHandler) grpc.MethodDesc {
	return grpc.MethodDesc{
		MethodName: name,
		Handler: func(_ interface{}, ctx context.Context, dec func(interface{}) error,
			_ grpc.UnaryServerInterceptor) (interface{}, error) {
			var request []byte
			if err := dec(&request); err != nil {
				return nil, err
			}
			number, done := seen.call(ctx, name)
			defer done()
			response, err := handle(ctx, request, number)
			if err != nil {
				return nil, err
			}
			return response, nil
		},
	}
}

func codeNamed(name string) codes.Code {
	var code codes.Code
	if err := code.UnmarshalJSON([]byte(strconv.Quote(name))); err != nil {
		return codes.Unknown
	}
	return code
}

func echo(ctx context.Context, request []byte, _ int) ([]byte, error) {
	grpc.SendHeader(ctx, metadata.Pairs("x-served-by", "grpc-go", "x-served-bin", "\x00\xff"))
	md, _ := metadata.FromIncomingContext(ctx)
	custom := metadata.MD{}
	for name, values := range md {
		if strings.HasPrefix(name, "x-") {
			custom[name] = values
		}
	}
	grpc.SetTrailer(ctx, custom)
	return request, nil
}

func fail(_ context.Context, request []byte, _ int) ([]byte, error) {
	parts := strings.SplitN(string(request), " ", 2)
	message := ""
	if len(parts) == 2 {
		message = parts[1]
	}
	return nil, status.Error(codeNamed(parts[0]), message)
}

func flaky(ctx context.Context, request []byte, n int) ([]byte, error) {
	if n > len(answers) {
		n = len(answers)
	}
	parts := strings.SplitN(answers[n-1], ":", 2)
	if parts[0] == "OK" {
		return request, nil
	}
	if len(parts) == 2 {
		grpc.SetTrailer(ctx, metadata.Pairs("grpc-retry-pushback-ms", parts[1]))
	}
	return nil, status.Error(codeNamed(parts[0]), strings.ToLower(parts[0]))
}

func deadline(ctx context.Context, _ []byte, _ int) ([]byte, error) {
	when, ok := ctx.Deadline()
	if !ok {
		return []byte("none"), nil
	}
	return []byte(strconv.FormatInt(time.Until(when).Milliseconds(), 10)), nil
}

func hang(ctx context.Context, _ []byte, _ int) ([]byte, error) {
	select {
	case <-ctx.Done():
		seen.countCancelled()
	case <-time.After(safetyNet):
	}
	return []byte{}, nil
}

func gate(_ context.Context, request []byte, _ int) ([]byte, error) {
	n, err := strconv.Atoi(string(request))
	if err != nil || n < 1 {
		return nil, status.Error(codes.InvalidArgument, "Gate takes a count")
	}
	if !seen.passGate(n) {
		return nil, status.Error(codes.DeadlineExceeded, "the gate never filled")
	}
	return []byte("passed"), nil
}

func main() {
	cert := flag.String("cert", "", "PEM certificate chain for TLS (empty: plain text)")
	key := flag.String("key", "", "PEM private key of --cert")
	answerList := flag.String("answers", "OK", "what Flaky's calls get, in turn")
	maxAge := flag.Duration("max-connection-age", 0, "keepalive.ServerParameters.MaxConnectionAge (0: none)")
	grace := flag.Duration("max-connection-age-grace", safetyNet,
		"keepalive.ServerParameters.MaxConnectionAgeGrace: how long calls may go on after the age")
	maxStreams := flag.Uint("max-concurrent-streams", 0, "grpc.MaxConcurrentStreams (0: grpc-go's default)")
	maxReceive := flag.Int("max-receive-message-size", 0, "grpc.MaxRecvMsgSize (0: grpc-go's default)")
	window := flag.Int("initial-window-size", 0,
		"grpc.InitialWindowSize and InitialConnWindowSize, at least 65536: a fixed window (0: grpc-go's, grown from its BDP PINGs)")
	compressAll := flag.Bool("compress-all", false, "gzip every answer (grpc.RPCCompressor)")
	maxHeaderList := flag.Uint("max-header-list-size", 0,
		"grpc.MaxHeaderListSize, advertised as SETTINGS_MAX_HEADER_LIST_SIZE (0: grpc-go's default)")
	flag.Parse()
	answers = strings.Split(*answerList, ",")
	encoding.RegisterCodec(rawCodec{})

	desc := grpc.ServiceDesc{
		ServiceName: service,
		HandlerType: (*interface{})(nil),
		Methods: []grpc.MethodDesc{
			unary("Echo", echo), unary("Fail", fail), unary("Flaky", flaky),
			unary("Deadline", deadline), unary("Hang", hang), unary("Gate", gate),
		},
		Streams: []grpc.StreamDesc{
			{StreamName: "Count", ServerStreams: true, Handler: count},
			{StreamName: "Join", ClientStreams: true, Handler: join},
			{StreamName: "Drain", ClientStreams: true, Handler: drain},
			{StreamName: "Chat", ServerStreams: true, ClientStreams: true, Handler: chat},
		},
	}

	options := []grpc.ServerOption{
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: 5 * time.Minute}),
	}
	if *maxAge > 0 {
		// By default the grace outlasts any call of a test: a call on an
		// aged connection ends as the client drives it, not cut by the server.
		options = append(options, grpc.KeepaliveParams(keepalive.ServerParameters{
			MaxConnectionAge: *maxAge, MaxConnectionAgeGrace: *grace}))
	}
	if *maxStreams > 0 {
		options = append(options, grpc.MaxConcurrentStreams(uint32(*maxStreams)))
	}
	if *maxReceive > 0 {
		options = append(options, grpc.MaxRecvMsgSize(*maxReceive))
	}
	if *window > 0 {
		options = append(options, grpc.InitialWindowSize(int32(*window)),
			grpc.InitialConnWindowSize(int32(*window)))
	}
	if *maxHeaderList > 0 {
		options = append(options, grpc.MaxHeaderListSize(uint32(*maxHeaderList)))
	}
	if *compressAll {
		options = append(options, grpc.RPCCompressor(grpc.NewGZIPCompressor()))
	}
	if *cert != "" {
		pair, err := tls.LoadX509KeyPair(*cert, *key)
		if err != nil {
			fmt.Fprintf(os.Stderr, "grpc_go_peer: %v\n", err)
			os.Exit(1)
		}
		options = append(options, grpc.Creds(credentials.NewServerTLSFromCert(&pair)))
	}
	server := grpc.NewServer(options...)
	server.RegisterService(&desc, nil)

	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintf(os.Stderr, "grpc_go_peer: %v\n", err)
		os.Exit(1)
	}
	go server.Serve(watchedListener{Listener: listener, plainText: *cert == ""})
	port, _ := json.Marshal(map[string]int{"port": listener.Addr().(*net.TCPAddr).Port})
	fmt.Println(string(port))

	lines := bufio.NewScanner(os.Stdin)
	for lines.Scan() {
		if command := strings.TrimSpace(lines.Text()); command == "stats" {
			os.Stdout.Write(append(seen.report(), '\n'))
		} else {
			answer, _ := json.Marshal(map[string]string{"error": "unknown command " + command})
			fmt.Println(string(answer))
		}
	}
	server.Stop()
}

func count(_ interface{}, stream grpc.ServerStream) error {
	_, done := seen.call(stream.Context(), "Count")
	defer done()
	var request []byte
	if err := stream.RecvMsg(&request); err != nil {
		return err
	}
	n, err := strconv.Atoi(string(request))
	if err != nil {
		return status.Error(codes.InvalidArgument, "Count takes a count")
	}
	for i := 1; i <= n; i++ {
		if err := stream.SendMsg([]byte(strconv.Itoa(i))); err != nil {
			return err
		}
	}
	return nil
}

// receiveAll hands each message the client streams to take, until the
// client's half-close; an error ends the call with it.
func receiveAll(stream grpc.ServerStream, take func(message []byte)) error {
	for {
		var message []byte
		err := stream.RecvMsg(&message)
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		take(message)
	}
}

func join(_ interface{}, stream grpc.ServerStream) error {
	_, done := seen.call(stream.Context(), "Join")
	defer done()
	stream.SendHeader(metadata.Pairs("x-served-by", "grpc-go"))
	var parts []string
	if err := receiveAll(stream, func(m []byte) { parts = append(parts, string(m)) }); err != nil {
		return err
	}
	return stream.SendMsg([]byte(strings.Join(parts, "+")))
}

func drain(_ interface{}, stream grpc.ServerStream) error {
	_, done := seen.call(stream.Context(), "Drain")
	defer done()
	total := 0
	if err := receiveAll(stream, func(m []byte) { total += len(m) }); err != nil {
		return err
	}
	return stream.SendMsg([]byte(strconv.Itoa(total)))
}

func chat(_ interface{}, stream grpc.ServerStream) error {
	_, done := seen.call(stream.Context(), "Chat")
	defer done()
	for {
		var message []byte
		err := stream.RecvMsg(&message)
		if err == io.EOF {
			return nil
		}
		if err != nil {
			if stream.Context().Err() != nil {
				seen.countCancelled()
			}
			return err
		}
		if err := stream.SendMsg(append([]byte("echo:"), message...)); err != nil {
			return err
		}
	}
}
