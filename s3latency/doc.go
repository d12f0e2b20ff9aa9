// Package s3latency puts the latency of a real S3 service between floe and
// a local S3 API (MinIO), so that tests and benchmarks see what users see
// on AWS: tens of milliseconds per request, a long tail, a per-connection
// throughput and throttling. It costs time, not CPU: the proxy sleeps.
//
//	client ──► Proxy ── sleep(draw(profile, op, size)) ──► MinIO
//	 (floe)     │                                          │
//	            └─◄── body streamed at the profile's ◄─────┘
//	                  per-connection throughput
//
// A request is forwarded unchanged (its Host header too, so that SigV4
// signatures made for the proxy's address still verify upstream). Per
// request the proxy classifies the operation (GET, PUT, multipart part,
// HEAD, DELETE, LIST, ...), draws a latency from the profile's
// distribution for that operation and size, and:
//
//   - PUT and the multipart calls: forwards, then answers once the drawn
//     latency has passed since the request arrived (the upstream's own time
//     counts towards it);
//   - GET: waits the drawn time to first byte, forwards, and streams the
//     body no faster than the drawn per-connection throughput;
//   - HEAD, DELETE, LIST: like a small GET's first byte.
//
// A request whose client gives up (a hedged request's loser, a timeout)
// stops waiting at once.
//
// # Profiles
//
// Selected by name (Lookup, the FLOE_S3_PROFILE environment variable of the
// test harness, S3_PROFILE of the benchmark scripts, cmd/s3-latency-proxy's
// --profile):
//
//   - none: forwards with no delay.
//   - s3-standard: S3 Standard in one region, from a client in that region.
//     GET first byte 15 ms p50 / 60 ms p99; PUT 30 ms p50 / 200 ms p99 up to
//     1 MiB, rising to 60 ms / 400 ms at 8 MiB (Aiven's measurements for
//     KIP-1150: PUT p99 200-400 ms for 2-8 MiB objects), and beyond 8 MiB
//     the transfer at the connection's throughput; 80-100 MiB/s per
//     connection (AWS's performance guidelines: about 85-90 MB/s per
//     connection, scaled by parallel connections); HEAD, DELETE and LIST
//     like a small GET.
//   - s3-express: S3 Express One Zone, a directory bucket in the client's
//     zone. Single-digit milliseconds: GET first byte 3 ms p50 / 8 ms p99,
//     PUT 5 ms / 10 ms up to 1 MiB and 8 ms / 14 ms at 8 MiB (AWS: "consistent
//     single-digit millisecond request latency"), 100-150 MiB/s per
//     connection.
//   - slow-tail: s3-standard, plus 1% of requests delayed a further 1-3 s,
//     and 503 SlowDown (S3's documented throttle) for PUTs beyond 3,500 a
//     second per prefix (AWS: "3,500 PUT/COPY/POST/DELETE ... requests per
//     second per partitioned prefix") and for 0.1% of PUTs at random. It
//     proves retries and hedging.
//
// Latencies are log-normal, fitted to each (p50, p99) pair: the median is
// p50, and sigma = ln(p99/p50)/2.326 puts the 99th percentile at p99.
package s3latency
