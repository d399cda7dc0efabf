package contract

import (
	"net/url"
	"strings"
)

// Redacted stands for a secret left out of a URL.
const Redacted = "xxxxx"

// secretParams are query parameter names (lower case, or parts of them)
// whose values are taken for secrets.
var secretParams = []string{"token", "secret", "password", "passwd", "pwd", "key", "sig", "auth", "credential", "session", "ticket", "code"}

// RedactURL returns raw fit for a log or an error: the user
// information (the whole of it) and the values of query parameters whose names look secret
// (token, secret, password, key, signature, auth, …) replaced by Redacted.
// A URL that does not parse is shown as its scheme and host at most.
func RedactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		// Cut at the first character after the authority that could
		// start the secret part; drop any user information.
		s := raw
		if i := strings.IndexAny(s, "?#"); i >= 0 {
			s = s[:i] + "?" + Redacted
		}
		if i := strings.LastIndex(s, "@"); i >= 0 {
			scheme, _, ok := strings.Cut(s, "://")
			if ok {
				s = scheme + "://" + Redacted + "@" + s[i+1:]
			} else {
				s = Redacted + "@" + s[i+1:]
			}
		}
		return s
	}
	if u.User != nil {
		u.User = url.User(Redacted) // a user name alone can be a token
	}
	if u.RawQuery != "" {
		q, err := url.ParseQuery(u.RawQuery)
		if err != nil {
			u.RawQuery = Redacted
		} else {
			for k, vs := range q {
				if secretName(k) {
					for i := range vs {
						vs[i] = Redacted
					}
				}
			}
			u.RawQuery = q.Encode()
		}
	}
	if u.Fragment != "" {
		u.Fragment = Redacted
	}
	return u.String()
}

func secretName(k string) bool {
	k = strings.ToLower(k)
	for _, s := range secretParams {
		if strings.Contains(k, s) {
			return true
		}
	}
	return false
}
