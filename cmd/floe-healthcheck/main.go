// Command floe-healthcheck is the container image's HEALTHCHECK: the image
// has no shell or curl, so this static binary GETs a floe process's
// /healthz and exits 0 on 200, 1 otherwise.
//
//	floe-healthcheck                       # $FLOE_HEALTHCHECK_URL, else /healthz on $FLOE_HTTP_ADDR, else 127.0.0.1:8080 and :8090
//	floe-healthcheck http://127.0.0.1:8081/healthz
//
// With no URL it asks, in turn, $FLOE_HEALTHCHECK_URL, the port of
// $FLOE_HTTP_ADDR (the broker's and the coordinator's --http-addr from the
// environment) on 127.0.0.1, then the broker's and the coordinator's
// default ports, 8080 and 8090: healthy when one answers 200. An https URL
// is not verified: the check is of the container itself, on loopback.
package main

import (
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"time"
)

func main() {
	os.Exit(run(os.Args[1:], os.Getenv, os.Stderr))
}

func run(args []string, getenv func(string) string, stderr io.Writer) int {
	if len(args) > 1 {
		fmt.Fprintln(stderr, "usage: floe-healthcheck [URL]")
		return 2
	}
	urls := candidates(args, getenv)
	client := &http.Client{
		Timeout:   3 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}, //nolint:gosec // loopback self-check
	}
	var last error
	for _, u := range urls {
		resp, err := client.Get(u)
		if err != nil {
			last = err
			continue
		}
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			return 0
		}
		last = fmt.Errorf("%s: %s %s", u, resp.Status, body)
	}
	fmt.Fprintln(stderr, "unhealthy:", last)
	return 1
}

// candidates returns the URLs to try, in order.
func candidates(args []string, getenv func(string) string) []string {
	if len(args) == 1 {
		return args
	}
	if u := getenv("FLOE_HEALTHCHECK_URL"); u != "" {
		return []string{u}
	}
	if addr := getenv("FLOE_HTTP_ADDR"); addr != "" && addr != "-" {
		if _, port, err := net.SplitHostPort(addr); err == nil {
			scheme := "http"
			if getenv("FLOE_TLS_CERT") != "" {
				scheme = "https"
			}
			return []string{scheme + "://" + net.JoinHostPort("127.0.0.1", port) + "/healthz"}
		}
	}
	return []string{"http://127.0.0.1:8080/healthz", "http://127.0.0.1:8090/healthz"}
}
