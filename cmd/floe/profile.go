package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/floe-io/floe/internal/flagenv"
)

// A global setting comes, first found first, from its flag, its
// environment variable (flagenv.Name: FLOE_BROKERS; only for the settings
// with env set: FLOE_TLS_CERT and FLOE_TLS_KEY already configure
// cmd/broker's listener, so TLS settings are not read from the
// environment), the profile file, or its default.
type setting struct {
	name   string
	def    string
	env    bool
	isBool bool
	usage  string
}

var settings = []setting{
	{name: "brokers", def: "127.0.0.1:9092", env: true, usage: "Kafka bootstrap `addresses`, comma-separated"},
	{name: "http", def: "127.0.0.1:8080", env: true, usage: "the broker's HTTP `address` (kv get)"},
	{name: "tls", def: "false", isBool: true, usage: "connect with TLS (implied by the other --tls-* settings)"},
	{name: "tls-ca", usage: "PEM `file` of CAs to verify brokers with (default: the system's roots)"},
	{name: "tls-cert", usage: "PEM client certificate `file`, for mutual TLS"},
	{name: "tls-key", usage: "PEM client key `file`, for mutual TLS"},
	{name: "tls-insecure-skip-verify", def: "false", isBool: true, usage: "do not verify the brokers' certificates (testing only)"},
	{name: "sasl-mechanism", env: true, usage: "SASL `mechanism`: PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512 (default: no SASL)"},
	{name: "sasl-user", env: true, usage: "SASL `user` (also HTTP Basic for kv get)"},
	{name: "sasl-password", env: true, usage: "SASL `password`"},
	{name: "timeout", def: "30s", env: true, usage: "`duration` bound on each admin request"},
	{name: "json", def: "false", isBool: true, usage: "print JSON instead of tables"},
	{name: "profile", env: true, usage: "profile `file` of key=value settings (default: ~/.config/floe/profile when it exists)"},
}

// globals are the resolved global settings.
type globals struct {
	set map[string]string // given as flags

	brokers        []string
	http           string
	tls            bool
	tlsCA          string
	tlsCert        string
	tlsKey         string
	tlsInsecure    bool
	saslMechanism  string
	saslUser       string
	saslPassword   string
	timeout        time.Duration
	json           bool
	resolved       bool
	lookupEnv      func(string) (string, bool)
	defaultProfile func() string
}

func newGlobals() *globals {
	return &globals{set: map[string]string{}, lookupEnv: os.LookupEnv, defaultProfile: defaultProfilePath}
}

// defaultProfilePath is ~/.config/floe/profile (os.UserConfigDir's floe
// directory).
func defaultProfilePath() string {
	dir, err := os.UserConfigDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "floe", "profile")
}

// globalFlag records a global flag given on the command line.
type globalFlag struct {
	g *globals
	s setting
}

func (f globalFlag) String() string {
	if f.g == nil {
		return ""
	}
	return f.s.def
}
func (f globalFlag) IsBoolFlag() bool { return f.s.isBool }
func (f globalFlag) Set(v string) error {
	if f.s.isBool {
		if _, err := strconv.ParseBool(v); err != nil {
			return errors.New("not a boolean")
		}
	}
	f.g.set[f.s.name] = v
	return nil
}

// register adds the global flags to fs.
func (g *globals) register(fs *flag.FlagSet) {
	for _, s := range settings {
		fs.Var(globalFlag{g, s}, s.name, s.usage)
	}
}

func (g *globals) isGlobal(name string) bool {
	for _, s := range settings {
		if s.name == name {
			return true
		}
	}
	return false
}

// printUsage prints the global flags.
func (g *globals) printUsage(w io.Writer) {
	fs := flag.NewFlagSet("", flag.ContinueOnError)
	g.register(fs)
	var all []*flag.Flag
	fs.VisitAll(func(f *flag.Flag) { all = append(all, f) })
	fmt.Fprintln(w, "Global flags (also in the profile file; brokers, http, sasl-*, timeout and profile also as FLOE_BROKERS...):")
	printFlags(w, all)
}

// resolve fills in the settings from flags, the environment, the profile
// and the defaults. Bad values are usage errors.
func (g *globals) resolve() error {
	if g.resolved {
		return nil
	}
	g.resolved = true
	get := func(s setting) (string, bool) {
		if v, ok := g.set[s.name]; ok {
			return v, true
		}
		if s.env {
			if v, ok := g.lookupEnv(flagenv.Name(s.name)); ok {
				return v, true
			}
		}
		return "", false
	}
	profile, explicit := get(settings[len(settings)-1])
	if !explicit {
		profile = g.defaultProfile()
	}
	prof := map[string]string{}
	if profile != "" {
		p, err := loadProfile(profile)
		switch {
		case errors.Is(err, fs.ErrNotExist) && !explicit:
		case err != nil:
			return usageError{err.Error()}
		default:
			prof = p
		}
	}
	vals := map[string]string{}
	for _, s := range settings {
		v, ok := get(s)
		if !ok {
			if v, ok = prof[s.name]; !ok {
				v = s.def
			}
		}
		vals[s.name] = v
	}
	var errs []error
	boolean := func(name string) bool {
		b, err := strconv.ParseBool(vals[name])
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %q is not a boolean", name, vals[name]))
		}
		return b
	}
	for _, b := range strings.Split(vals["brokers"], ",") {
		if b = strings.TrimSpace(b); b != "" {
			g.brokers = append(g.brokers, b)
		}
	}
	if len(g.brokers) == 0 {
		errs = append(errs, errors.New("brokers: no address"))
	}
	g.http = vals["http"]
	g.tlsCA, g.tlsCert, g.tlsKey = vals["tls-ca"], vals["tls-cert"], vals["tls-key"]
	g.tlsInsecure = boolean("tls-insecure-skip-verify")
	g.tls = boolean("tls") || g.tlsCA != "" || g.tlsCert != "" || g.tlsKey != "" || g.tlsInsecure
	g.saslMechanism = strings.ToUpper(vals["sasl-mechanism"])
	g.saslUser, g.saslPassword = vals["sasl-user"], vals["sasl-password"]
	switch g.saslMechanism {
	case "", "PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512":
	default:
		errs = append(errs, fmt.Errorf("sasl-mechanism: %q is not PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512", vals["sasl-mechanism"]))
	}
	if g.saslMechanism != "" && g.saslUser == "" {
		errs = append(errs, errors.New("sasl-mechanism needs sasl-user"))
	}
	if (g.tlsCert == "") != (g.tlsKey == "") {
		errs = append(errs, errors.New("tls-cert and tls-key go together"))
	}
	d, err := time.ParseDuration(vals["timeout"])
	if err != nil || d <= 0 {
		errs = append(errs, fmt.Errorf("timeout: %q is not a positive duration", vals["timeout"]))
	}
	g.timeout = d
	g.json = boolean("json")
	if err := errors.Join(errs...); err != nil {
		return usageError{err.Error()}
	}
	return nil
}

// loadProfile reads a profile file: one setting a line, named as its
// global flag without the dashes in front, "key=value" or "key: value" (so
// a flat YAML file reads too); blank lines and lines starting with # are
// skipped, and a value may be quoted:
//
//	brokers = broker-1:9092,broker-2:9092
//	tls-ca = /etc/floe/ca.pem
//	sasl-mechanism: SCRAM-SHA-512
//	sasl-user: admin
//	sasl-password: "s3cret"
func loadProfile(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("profile: %w", err)
	}
	defer f.Close()
	m := map[string]string{}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.IndexAny(line, "=:")
		if i < 0 {
			return nil, fmt.Errorf("profile %s:%d: want key=value", path, n)
		}
		k, v := strings.TrimSpace(line[:i]), strings.TrimSpace(line[i+1:])
		if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
			v = v[1 : len(v)-1]
		}
		known := false
		for _, s := range settings {
			known = known || s.name == k && k != "profile"
		}
		if !known {
			return nil, fmt.Errorf("profile %s:%d: unknown setting %q", path, n, k)
		}
		m[k] = v
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("profile %s: %w", path, err)
	}
	return m, nil
}
