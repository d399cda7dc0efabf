package conf

import (
	"errors"
	"flag"
	"regexp"
	"slices"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// The one rule for showing a configuration value or a command line
// anywhere (am resources, container-launcher probe and check, logs, error
// messages), so that no secret is ever printed:
//
//   - a key whose name looks secret (IsSensitive) has its value hidden
//     whole;
//   - in any other value, and in a command line (a discovery script's
//     args, a worker's), a word after a secret-looking flag is hidden:
//     "--password x", "--token=x", "-Dsome.secret=x", and "-p x", "-p=x",
//     "-px" (the short password flag of mysql, sshpass and their kin);
//     a word name=value, or "name:" and the next word, whose name is
//     secret ("token=x", "password=x", "key=x", "Token: x": isSecretName);
//     and a URL's password ("https://user:x@host");
//   - a malformed -D argument is named by its key alone (redactArg), and
//     the flag package, which repeats a rejected argument in its error, never
//     gets to report one (DynamicFlag, ParseError).
//
//   - what a program run with such a command line printed has those
//     secrets hidden wherever it repeats them (RedactOutput).
//
// RedactValue, RedactArgs (RedactArgList) and RedactOutput apply it; Hidden is what stands
// for what they hide.

// Hidden stands in for a value that is not shown.
const Hidden = "(hidden)"

// sensitiveParts are key fragments whose values must never be shown (as
// Flink's GlobalConfiguration.isSensitive, with passwd and private-key).
var sensitiveParts = []string{"password", "passwd", "secret", "fs.azure.account.key", "apikey", "api-key",
	"auth-params", "service-key", "token", "basic-auth", "jaas.config", "http-headers", "keytab", "private-key"}

// IsSensitive reports whether key's value is a secret that must stay out of
// logs and errors. It takes a configuration key or a flag's name.
func IsSensitive(key string) bool {
	k := strings.ToLower(key)
	for _, p := range sensitiveParts {
		if strings.Contains(k, p) {
			return true
		}
	}
	return false
}

// RedactValue is key's value as it may be shown: Hidden for a sensitive
// key, else value with the secrets of its words hidden (as RedactArgs
// does), unchanged, spacing included, when it has none.
func RedactValue(key, value string) string {
	if IsSensitive(key) {
		return Hidden
	}
	spans := wordRE().FindAllStringIndex(value, -1)
	words := make([]string, len(spans))
	for i, sp := range spans {
		words[i] = value[sp[0]:sp[1]]
	}
	red, changed := redactWords(words)
	if !changed {
		return value
	}
	var b strings.Builder
	last := 0
	for i, sp := range spans {
		b.WriteString(value[last:sp[0]])
		b.WriteString(red[i])
		last = sp[1]
	}
	b.WriteString(value[last:])
	return b.String()
}

// wordRE is compiled on first use: the launcher starts without it.
var wordRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\S+`) })

// RedactArgs renders a command's arguments for a message, the values of
// secret-looking flags hidden: "--token=x" becomes "--token=(hidden)", in
// "--password x" and "-p x" the x is hidden, "-px" becomes "-p(hidden)".
// Other arguments are shown as they are: a discovery script's args are for
// people to rerun it by hand.
func RedactArgs(args []string) string {
	out, _ := redactWords(args)
	return strings.Join(out, " ")
}

// RedactArgList is args with the secrets RedactArgs hides replaced by
// Hidden, one argument each (for a list shown as a list: JSON).
func RedactArgList(args []string) []string {
	out, _ := redactArgList(args)
	return out
}

// shortPassword is the one-letter flag whose value is a password by
// convention (mysql -p, sshpass -p, …).
const shortPassword = "-p"

// RedactOutput is text, what a program run with args printed, as it may be
// shown: every secret RedactArgs hides in args hidden wherever text
// repeats it (a script that echoes its command line on failure), and
// text's own words redacted as RedactValue does. Secrets shorter than 3
// bytes are left to the word rule: hiding every "x" would garble the text.
func RedactOutput(text string, args []string) string {
	_, secrets := redactArgList(args)
	// Longest first, so that no secret is left half-hidden by a shorter one
	// inside it.
	slices.SortFunc(secrets, func(a, b string) int { return len(b) - len(a) })
	for _, sec := range secrets {
		if len(sec) >= 3 {
			text = strings.ReplaceAll(text, sec, Hidden)
		}
	}
	return RedactValue("", text)
}

// redactWords hides the secrets in words, one argument each; changed
// reports whether it hid any.
func redactWords(words []string) (out []string, changed bool) {
	out, secrets := redactArgList(words)
	return out, len(secrets) > 0
}

// redactArgList hides the secrets in words, one argument each, and returns
// them.
func redactArgList(words []string) (out, secrets []string) {
	out = make([]string, len(words))
	hideNext := false
	for i, a := range words {
		if hideNext {
			// The value of the flag before, whatever it looks like: a
			// password may start with '-'.
			out[i], hideNext = Hidden, false
			secrets = append(secrets, a)
			continue
		}
		out[i] = a
		name, value, hasValue := strings.Cut(a, "=")
		switch {
		case !strings.HasPrefix(a, "-") && hasValue && value != "" && isSecretName(name):
			// token=abc, password=x, AWS_SECRET_ACCESS_KEY=x, key=x: what
			// a failing program prints about its credentials.
			out[i] = name + "=" + Hidden
			secrets = append(secrets, value)
			continue
		case !strings.HasPrefix(a, "-") && !hasValue && len(a) > 1 && strings.HasSuffix(a, ":") && isSecretName(a[:len(a)-1]):
			hideNext = true // "token: abc", "Password: x"
			continue
		case !strings.HasPrefix(a, "-") || a == "-" || a == "--":
		case name == shortPassword || IsSensitive(strings.TrimLeft(name, "-")):
			if hasValue {
				out[i] = name + "=" + Hidden
				secrets = append(secrets, value)
			} else {
				hideNext = true
			}
			continue
		case strings.HasPrefix(a, shortPassword) && !strings.HasPrefix(a, "--"):
			out[i] = shortPassword + Hidden // -pSECRET
			secrets = append(secrets, a[len(shortPassword):])
			continue
		}
		for _, m := range urlPasswordRE().FindAllStringSubmatchIndex(a, -1) {
			secrets = append(secrets, a[m[4]:m[5]])
		}
		if strings.Contains(a, "://") {
			out[i] = urlPasswordRE().ReplaceAllString(a, "${1}"+Hidden+"@")
		}
	}
	return out, secrets
}

// isSecretName reports whether name, the left side of a name=value word,
// names a secret: a sensitive key (IsSensitive), or a key ("key",
// "access_key", "apiKey"; a name ending in "key").
func isSecretName(name string) bool {
	if name == "" || strings.ContainsAny(name, "/:") {
		return false // a path or URL with '=' in it, not an assignment
	}
	return IsSensitive(name) || strings.HasSuffix(strings.ToLower(name), "key")
}

// urlPasswordRE finds the password of a URL's user info: scheme://user:password@
// (compiled on first use).
var urlPasswordRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`([A-Za-z][A-Za-z0-9+.-]*://[^/\s:@]*:)([^/\s@]*)@`)
})

// redactArg shows a malformed -D argument (or a dynamic file's, or a Spark
// --conf's key) without risking a secret: at most the part before any '=',
// ':' or space, and never more than 40 bytes.
func redactArg(s string) string {
	if i := strings.IndexFunc(s, func(r rune) bool { return r == '=' || r == ':' || unicode.IsSpace(r) }); i >= 0 {
		s = s[:i] + "…"
	}
	if len(s) > 40 {
		n := 40
		for n > 0 && !utf8.RuneStart(s[n]) {
			n--
		}
		s = s[:n] + "…"
	}
	return s
}

// DynamicFlag is the -D flag of am and container-launcher (a flag.Value):
// every value must be key=value (ParseDynamic), so that a -D written with
// a space ("-D some.password hunter2") stops the command line there, at
// the key, before the value (the next argument) could be shown as a stray
// argument or run as the worker. Parse a FlagSet holding one with
// ParseError, which keeps the rejected argument out of the message.
type DynamicFlag struct {
	Values   []string // the overrides, in order
	rejected error
}

// String implements flag.Value.
func (d *DynamicFlag) String() string {
	if d == nil {
		return ""
	}
	return strings.Join(d.Values, " ")
}

// errRejected is what Set gives the flag package, whose message repeats the
// argument ("invalid value %q for flag -D: …"); ParseError puts Set's own
// error, which names the key alone, in its place.
var errRejected = errors.New("rejected")

// Set implements flag.Value.
func (d *DynamicFlag) Set(v string) error {
	if _, _, err := ParseDynamic(v); err != nil {
		d.rejected = err
		return errRejected
	}
	d.Values = append(d.Values, v)
	return nil
}

// ParseError is the error to show for err, what fs.Parse returned: when a
// DynamicFlag of fs rejected its argument, the DynamicFlag's error (the
// key alone) instead of the flag package's (the whole argument); else err.
func ParseError(fs *flag.FlagSet, err error) error {
	if err == nil {
		return nil
	}
	var rejected error
	fs.VisitAll(func(f *flag.Flag) {
		if d, ok := f.Value.(*DynamicFlag); ok && d.rejected != nil && rejected == nil {
			rejected = d.rejected
		}
	})
	if rejected != nil {
		return rejected
	}
	return err
}
