// SPDX-License-Identifier: Apache-2.0

// grpc_go_client is grpc-go's side of bench/run's gRPC row: unary calls of
// tests/rpc/echo.proto's Say through ClientConn.Invoke with a pass-through
// codec (the request encoded by hand, so no generated code), C in flight on
// one connection, plain text or TLS. It prints the JSON line grpc_bench
// prints, its CPU from getrusage over the measured calls alone.
//
//	grpc_go_client -n N -c C -target HOST:PORT [-ca CA.pem]
//
// GOMAXPROCS is left to the runtime, which takes it from the CPUs the
// process may run on: bench/run pins every client to one CPU, so 1, as the
// C++ clients' threads share that one CPU (the JSON line says which).
package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
)

const say = "/outbound.test.Echo/Say"

// rawCodec passes serialised messages through: a request is a []byte, a
// reply is unmarshalled into a *[]byte.
type rawCodec struct{}

func (rawCodec) Marshal(v interface{}) ([]byte, error) { return v.([]byte), nil }
func (rawCodec) Unmarshal(data []byte, v interface{}) error {
	*(v.(*[]byte)) = append((*(v.(*[]byte)))[:0], data...)
	return nil
}
func (rawCodec) Name() string { return "proto" }

func cpuSeconds() float64 {
	var u syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &u)
	return float64(u.Utime.Sec+u.Stime.Sec) + float64(u.Utime.Usec+u.Stime.Usec)/1e6
}

func switches() int64 {
	var u syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &u)
	return u.Nvcsw + u.Nivcsw
}

func main() {
	n := flag.Int64("n", 10000, "calls")
	c := flag.Int("c", 64, "calls in flight")
	target := flag.String("target", "", "HOST:PORT")
	ca := flag.String("ca", "", "PEM roots for TLS (empty: plain text)")
	flag.Parse()
	if *target == "" || *n < 1 || *c < 1 {
		flag.Usage()
		os.Exit(2)
	}

	creds := grpc.WithInsecure()
	if *ca != "" {
		pem, err := os.ReadFile(*ca)
		roots := x509.NewCertPool()
		if err != nil || !roots.AppendCertsFromPEM(pem) {
			fmt.Fprintf(os.Stderr, "grpc_go_client: no certificate in %s\n", *ca)
			os.Exit(1)
		}
		creds = grpc.WithTransportCredentials(credentials.NewTLS(&tls.Config{RootCAs: roots}))
	}
	ready, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	conn, err := grpc.DialContext(ready, *target, creds, grpc.WithBlock(),
		grpc.WithDefaultCallOptions(grpc.ForceCodec(rawCodec{})))
	cancel()
	if err != nil {
		fmt.Fprintf(os.Stderr, "grpc_go_client: %s did not connect: %v\n", *target, err)
		os.Exit(1)
	}
	defer conn.Close()

	// EchoRequest{text: 100 'x'}: field 1, length-delimited, 100 bytes, as
	// the other clients send.
	request := append([]byte{0x0a, 100}, bytes.Repeat([]byte{'x'}, 100)...)
	call := func(reply *[]byte) bool {
		err := conn.Invoke(context.Background(), say, request, reply)
		return err == nil && bytes.Equal(*reply, request)
	}
	var first []byte
	if !call(&first) {
		fmt.Fprintf(os.Stderr, "grpc_go_client: the first call to %s failed\n", *target)
		os.Exit(1)
	}

	// C goroutines, each making the next call as it finishes one: how a
	// grpc-go user keeps C unary calls in flight.
	var next, errors int64
	latencies := make([][]float64, *c)
	var wg sync.WaitGroup
	cpuBefore, switchesBefore := cpuSeconds(), switches()
	t0 := time.Now()
	for g := 0; g < *c; g++ {
		wg.Add(1)
		go func(mine *[]float64) {
			defer wg.Done()
			var reply []byte
			for atomic.AddInt64(&next, 1) <= *n {
				began := time.Now()
				if !call(&reply) {
					atomic.AddInt64(&errors, 1)
				}
				*mine = append(*mine, float64(time.Since(began))/1e6)
			}
		}(&latencies[g])
	}
	wg.Wait()
	seconds := time.Since(t0).Seconds()
	cpu := cpuSeconds() - cpuBefore
	switched := switches() - switchesBefore

	var all []float64
	for _, mine := range latencies {
		all = append(all, mine...)
	}
	sort.Float64s(all)
	pct := func(p float64) float64 { return all[int(p*float64(len(all)-1))] }
	var u syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &u)
	out, _ := json.Marshal(map[string]interface{}{
		"client": "grpc-go", "calls": *n, "concurrency": *c, "seconds": seconds,
		"calls_per_second": float64(*n) / seconds, "errors": errors,
		"latency_ms": map[string]float64{"p50": pct(0.5), "p90": pct(0.9), "p99": pct(0.99),
			"max": all[len(all)-1]},
		"cpu_seconds": cpu, "cpu_us_per_call": cpu * 1e6 / float64(*n),
		"context_switches_per_call": float64(switched) / float64(*n),
		"peak_rss_kb":               u.Maxrss,
		"gomaxprocs":                runtime.GOMAXPROCS(0),
	})
	fmt.Println(string(out))
	if errors != 0 {
		os.Exit(1)
	}
}
