package main

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"
)

// kvResult is kv get's answer.
type kvResult struct {
	Topic     string `json:"topic"`
	Key       string `json:"key"`
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
	Timestamp int64  `json:"timestamp"`
	// Value is the value as text when it is UTF-8, else base64 (standard
	// alphabet), as ValueEncoding says.
	Value         string `json:"value"`
	ValueEncoding string `json:"value_encoding"`
}

// kvError is /kv's JSON error body (kvindex.ErrorBody).
type kvError struct {
	ErrorCode int    `json:"error_code"`
	Message   string `json:"message"`
}

func kvGet(c *cli, args []string) error {
	f := c.flags("TOPIC KEY [flags]", `
Read the latest value of KEY in TOPIC from the broker's key index: GET
/kv/{topic}/{key} on its HTTP listener (--http; https with --tls; HTTP
Basic with --sasl-user and --sasl-password when security is on). The topic
needs kv.index.enabled=true, which the cluster allows with
--kv-index-enabled. The value is printed as it is, then a newline unless
--raw; --json adds partition, offset and timestamp. A key that is not
printable can be given in base64url (--base64).`)
	partition := f.Int("partition", -1, "look in `partition` (default: the key's, by the Java client's partitioner)")
	b64 := f.Bool("base64", false, "KEY is base64url (RFC 4648 URL-safe alphabet, padding optional)")
	raw := f.Bool("raw", false, "print the value's bytes alone, without a newline")
	pos, err := f.parse(args)
	if err != nil {
		return err
	}
	if len(pos) != 2 {
		return usagef("give TOPIC and KEY")
	}
	topic, key := pos[0], pos[1]
	if key == "" {
		return usagef("empty key")
	}
	if *b64 {
		if _, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(key, "=")); err != nil {
			return usagef("key %q is not base64url", key)
		}
	}
	tlsCfg, err := c.g.tlsConfig()
	if err != nil {
		return err
	}
	scheme := "http"
	hc := &http.Client{Timeout: c.g.timeout}
	if tlsCfg != nil {
		scheme = "https"
		hc.Transport = &http.Transport{TLSClientConfig: tlsCfg}
	}
	host := c.g.http
	if i := strings.Index(host, "://"); i >= 0 { // tolerate a URL
		if strings.HasPrefix(host, "https://") {
			scheme = "https"
		}
		host = strings.TrimSuffix(host[i+3:], "/")
	}
	q := url.Values{}
	if *partition >= 0 {
		q.Set("partition", strconv.Itoa(*partition))
	}
	if *b64 {
		q.Set("key_encoding", "base64url")
	}
	u := url.URL{Scheme: scheme, Host: host, Path: "/kv/" + topic + "/" + key, RawPath: "/kv/" + url.PathEscape(topic) + "/" + url.PathEscape(key), RawQuery: q.Encode()}
	req, err := http.NewRequestWithContext(c.ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return err
	}
	if c.g.saslUser != "" {
		req.SetBasicAuth(c.g.saslUser, c.g.saslPassword)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("%w (is the broker's HTTP listener at --http %s?)", err, c.g.http)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		var e kvError
		if json.Unmarshal(body, &e) == nil && e.ErrorCode != 0 {
			return fmt.Errorf("%s: %d %s", resp.Status, e.ErrorCode, e.Message)
		}
		return fmt.Errorf("%s: %s", resp.Status, strings.TrimSpace(string(body)))
	}
	if c.g.json {
		r := kvResult{Topic: topic, Key: key, Value: string(body), ValueEncoding: "utf8"}
		if !utf8.Valid(body) {
			r.Value, r.ValueEncoding = base64.StdEncoding.EncodeToString(body), "base64"
		}
		p, _ := strconv.ParseInt(resp.Header.Get("X-Kv-Partition"), 10, 32)
		r.Partition = int32(p)
		r.Offset, _ = strconv.ParseInt(resp.Header.Get("X-Kv-Offset"), 10, 64)
		r.Timestamp, _ = strconv.ParseInt(resp.Header.Get("X-Kv-Timestamp"), 10, 64)
		return printJSON(c.stdout, r)
	}
	if _, err := c.stdout.Write(body); err != nil {
		return err
	}
	if !*raw {
		_, err = io.WriteString(c.stdout, "\n")
	}
	return err
}
