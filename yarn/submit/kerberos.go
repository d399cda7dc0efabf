package submit

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/jcmturner/gokrb5/v8/keytab"

	"github.com/xres/xres/conf"
	"github.com/xres/xres/conf/localfile"
	"github.com/xres/xres/yarn"
)

// Flink's login keys (declared in conf/).
var (
	KeyLoginKeytab    = conf.KerberosLoginKeytab.Key
	KeyLoginPrincipal = conf.KerberosLoginPrincipal.Key
)

// ErrLoginConfig marks a keytab login the configuration gets wrong: one
// key of two, a keytab that is no keytab or lacks the principal, a
// principal that is not user@REALM. A configuration error (am exits 3).
var ErrLoginConfig = errors.New("kerberos login configuration")

// maxKeytabSize bounds the keytab read: real ones are a few KiB.
const maxKeytabSize = 1 << 20

// CheckLogin checks a keytab login before any KDC is asked: the principal
// is user@REALM (or user/host@REALM), the keytab a regular file of at most
// 1 MiB that parses as a keytab and holds a key of the principal. Errors
// wrap ErrLoginConfig and name the keys and the file, never the keytab's
// bytes (the keytab parser's own messages quote them, so they are not
// passed on).
func CheckLogin(keytabPath, principal string) error {
	user, realm, ok := strings.Cut(principal, "@")
	if !ok || user == "" || realm == "" || strings.ContainsAny(principal, " \t\n") {
		return fmt.Errorf("%w: %s %q: want user@REALM", ErrLoginConfig, KeyLoginPrincipal, principal)
	}
	b, err := localfile.ReadRegular(keytabPath, maxKeytabSize)
	if err != nil {
		return fmt.Errorf("%w: %s: %w", ErrLoginConfig, KeyLoginKeytab, err)
	}
	// A keytab starts with 0x05 and its version, 1 or 2 (MIT's format).
	if len(b) < 2 || b[0] != 5 || (b[1] != 1 && b[1] != 2) {
		return fmt.Errorf("%w: %s %s is not a keytab (%d bytes; a keytab starts with 0x05 0x02): export one with ktutil or kadmin ktadd",
			ErrLoginConfig, KeyLoginKeytab, keytabPath, len(b))
	}
	kt := keytab.New()
	if err := unmarshalKeytab(kt, b); err != nil {
		return fmt.Errorf("%w: %s %s does not parse as a keytab (%d bytes; truncated or damaged): export it again",
			ErrLoginConfig, KeyLoginKeytab, keytabPath, len(b))
	}
	comps := strings.Split(user, "/")
	for _, e := range kt.Entries {
		if e.Principal.Realm == realm && slices.Equal(e.Principal.Components, comps) {
			return nil
		}
	}
	return fmt.Errorf("%w: %s %s holds no key of %s %s", ErrLoginConfig, KeyLoginKeytab, keytabPath, KeyLoginPrincipal, principal)
}

// unmarshalKeytab is kt.Unmarshal with a panic (the parser indexes past
// the end of some truncated files) turned into an error.
func unmarshalKeytab(kt *keytab.Keytab, b []byte) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = errors.New("keytab parser panicked")
		}
	}()
	return kt.Unmarshal(b)
}

// Login says how a client logs in to a Kerberized cluster: with Keytab and
// Principal (Flink's security.kerberos.login.* keys) when set, else from
// the ticket cache ($KRB5CCNAME, else /tmp/krb5cc_<uid>). Getenv reads
// $KRB5_CONFIG (else /etc/krb5.conf) and $KRB5CCNAME; nil is os.Getenv.
type Login struct {
	Keytab    string
	Principal string
	// Krb5Conf is the krb5.conf to use (security.kerberos.krb5-conf.path);
	// "": $KRB5_CONFIG, else /etc/krb5.conf.
	Krb5Conf string
	Getenv   func(string) string
}

// Secure reports whether the Hadoop configuration asks for Kerberos
// (hadoop.security.authentication=kerberos).
func Secure(hc *conf.HadoopConfig) bool {
	v, _ := hc.Get(conf.HadoopSecurityAuthentication)
	return strings.EqualFold(strings.TrimSpace(v), "kerberos")
}

// KerberosLogin logs in for a Kerberized cluster; it returns nil, nil when
// the cluster uses simple authentication. The returned client names the
// RM's principal (yarn.resourcemanager.principal) as its service.
func KerberosLogin(hc *conf.HadoopConfig, l Login) (*yarn.Kerberos, error) {
	if !Secure(hc) {
		return nil, nil
	}
	getenv := l.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	krb5Conf := l.Krb5Conf
	if krb5Conf == "" {
		krb5Conf = getenv("KRB5_CONFIG")
	}
	if krb5Conf == "" {
		krb5Conf = "/etc/krb5.conf"
	}
	var k *yarn.Kerberos
	var err error
	switch {
	case l.Keytab != "" && l.Principal != "":
		if err := CheckLogin(l.Keytab, l.Principal); err != nil {
			return nil, err
		}
		k, err = yarn.NewKerberosFromKeytab(krb5Conf, l.Keytab, l.Principal)
	case l.Keytab != "":
		return nil, fmt.Errorf("%w: %s is set but %s is not", ErrLoginConfig, KeyLoginKeytab, KeyLoginPrincipal)
	case l.Principal != "":
		return nil, fmt.Errorf("%w: %s is set but %s is not", ErrLoginConfig, KeyLoginPrincipal, KeyLoginKeytab)
	default:
		cc := ccachePath(getenv)
		if cc == "" {
			return nil, fmt.Errorf("%w: hadoop.security.authentication is kerberos but %s and %s are not set and $KRB5CCNAME names no file ticket cache (%q)",
				yarn.ErrNoCredentials, KeyLoginKeytab, KeyLoginPrincipal, getenv("KRB5CCNAME"))
		}
		if _, serr := os.Stat(cc); serr != nil {
			return nil, fmt.Errorf("%w: hadoop.security.authentication is kerberos but %s and %s are not set and there is no ticket cache %s (run kinit, or set both keys)",
				yarn.ErrNoCredentials, KeyLoginKeytab, KeyLoginPrincipal, cc)
		}
		k, err = loginFromCCache(krb5Conf, cc)
		if err != nil {
			return nil, fmt.Errorf("%w: %s and %s are not set and the ticket cache is not usable (run kinit, or set both keys): %w",
				yarn.ErrNoCredentials, KeyLoginKeytab, KeyLoginPrincipal, err)
		}
	}
	if err != nil {
		return nil, err
	}
	k.ServicePrincipal, _ = hc.Get(conf.HadoopRMPrincipal)
	return k, nil
}

// loginFromCCache checks that cc looks like a ticket cache (gokrb5's parser
// panics on an empty or truncated file) and logs in from it.
func loginFromCCache(krb5Conf, cc string) (k *yarn.Kerberos, err error) {
	b, err := os.ReadFile(cc)
	if err != nil {
		return nil, fmt.Errorf("read ticket cache %s: %w", cc, err)
	}
	// A file ticket cache starts with 0x05 and its format version (1 to 4).
	if len(b) < 16 || b[0] != 5 || b[1] < 1 || b[1] > 4 {
		return nil, fmt.Errorf("ticket cache %s is empty or not a ticket cache (%d bytes)", cc, len(b))
	}
	defer func() {
		if r := recover(); r != nil {
			k, err = nil, fmt.Errorf("ticket cache %s does not parse: %v", cc, r)
		}
	}()
	return yarn.NewKerberosFromCCache(krb5Conf, cc)
}

// ccachePath is the file ticket cache: $KRB5CCNAME (FILE: or a bare path),
// else /tmp/krb5cc_<uid>; "" for caches of other types (KEYRING:, …).
func ccachePath(getenv func(string) string) string {
	cc := getenv("KRB5CCNAME")
	if cc == "" {
		return "/tmp/krb5cc_" + strconv.Itoa(os.Getuid())
	}
	if p, ok := strings.CutPrefix(cc, "FILE:"); ok {
		return p
	}
	if strings.Contains(cc, ":") && !strings.HasPrefix(cc, "/") {
		return ""
	}
	return cc
}

// ShortName is the short user name of a principal as Hadoop's default
// auth_to_local rule gives it for the default realm: its first component
// ("hadoop/host@REALM" and "hadoop@REALM" are "hadoop").
func ShortName(principal string) string {
	name, _, _ := strings.Cut(principal, "@")
	name, _, _ = strings.Cut(name, "/")
	return name
}

// KerberosUser is the short name of the logged-in user (the owner of
// /user/<name> on HDFS); "" for nil.
func KerberosUser(k *yarn.Kerberos) string {
	if k == nil || k.Client == nil || k.Client.Credentials == nil {
		return ""
	}
	return ShortName(k.Client.Credentials.UserName())
}
