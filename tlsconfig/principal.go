package tlsconfig

import (
	"crypto/x509"
	"fmt"
	"regexp"
	"strings"
)

// Rules map a client certificate's subject to a principal name, as Apache
// Kafka's ssl.principal.mapping.rules: a comma-separated list of
// "RULE:pattern/replacement/" (optionally followed by L or U to lower- or
// upper-case the result) and "DEFAULT". The first rule whose pattern
// matches the whole subject (its RFC 2253 form, "CN=alice,OU=eng,O=floe")
// gives the name; DEFAULT gives the subject unchanged. With no rule that
// matches, the subject is the name. The principal is "User:" + name.
type Rules struct {
	rules []rule
}

type rule struct {
	def         bool
	re          *regexp.Regexp
	replacement string
	toLower     bool
	toUpper     bool
}

// ParseRules parses Kafka's ssl.principal.mapping.rules syntax; "" is
// DEFAULT.
func ParseRules(s string) (Rules, error) {
	var rs Rules
	s = strings.TrimSpace(s)
	for s != "" {
		switch {
		case strings.HasPrefix(s, "DEFAULT"):
			rs.rules = append(rs.rules, rule{def: true})
			s = s[len("DEFAULT"):]
		case strings.HasPrefix(s, "RULE:"):
			s = s[len("RULE:"):]
			pattern, rest, ok := cutUnescaped(s)
			if !ok {
				return Rules{}, fmt.Errorf("tls principal mapping rule %q: no '/' after the pattern", s)
			}
			repl, rest, ok := cutUnescaped(rest)
			if !ok {
				return Rules{}, fmt.Errorf("tls principal mapping rule %q: no '/' after the replacement", s)
			}
			re, err := regexp.Compile("^(?:" + pattern + ")$")
			if err != nil {
				return Rules{}, fmt.Errorf("tls principal mapping rule pattern %q: %w", pattern, err)
			}
			// Java's "$1" is Go's "${1}" (Go would read "$1x" as a group named 1x).
			r := rule{re: re, replacement: javaGroup.ReplaceAllString(repl, "$${$1}")}
			switch {
			case strings.HasPrefix(rest, "L"):
				r.toLower, rest = true, rest[1:]
			case strings.HasPrefix(rest, "U"):
				r.toUpper, rest = true, rest[1:]
			}
			rs.rules = append(rs.rules, r)
			s = rest
		default:
			return Rules{}, fmt.Errorf("tls principal mapping rules: %q is neither RULE: nor DEFAULT", s)
		}
		s = strings.TrimSpace(s)
		if s != "" {
			if s[0] != ',' {
				return Rules{}, fmt.Errorf("tls principal mapping rules: expected ',' before %q", s)
			}
			s = strings.TrimSpace(s[1:])
		}
	}
	return rs, nil
}

// javaGroup is a numbered group reference in a Java replacement.
var javaGroup = regexp.MustCompile(`\$(\d+)`)

// cutUnescaped splits s at its first '/' not escaped by a backslash, and
// unescapes "\/" in the part before it.
func cutUnescaped(s string) (before, after string, ok bool) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == '\\' && i+1 < len(s) && s[i+1] == '/':
			b.WriteByte('/')
			i++
		case s[i] == '/':
			return b.String(), s[i+1:], true
		default:
			b.WriteByte(s[i])
		}
	}
	return "", "", false
}

// Name maps a subject (RFC 2253 form) to a principal name.
func (rs Rules) Name(subject string) string {
	for _, r := range rs.rules {
		if r.def {
			return subject
		}
		m := r.re.FindStringSubmatchIndex(subject)
		if m == nil {
			continue
		}
		out := string(r.re.ExpandString(nil, r.replacement, subject, m))
		switch {
		case r.toLower:
			out = strings.ToLower(out)
		case r.toUpper:
			out = strings.ToUpper(out)
		}
		return out
	}
	return subject
}

// Principal returns the principal of a verified client certificate:
// "User:" and the mapped name of its subject.
func (rs Rules) Principal(cert *x509.Certificate) string {
	return "User:" + rs.Name(cert.Subject.String())
}
