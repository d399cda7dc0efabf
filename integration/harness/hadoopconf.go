package harness

import (
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// ErrNoConf is returned when a HADOOP_CONF_DIR holds none of the *-site.xml files.
var ErrNoConf = errors.New("no Hadoop configuration")

// confFiles are read in this order; a later file overrides an earlier one, as in Hadoop.
var confFiles = []string{"core-site.xml", "hdfs-site.xml", "yarn-site.xml"}

// xmlConf is the shape of a Hadoop *-site.xml file.
type xmlConf struct {
	Properties []struct {
		Name  string `xml:"name"`
		Value string `xml:"value"`
	} `xml:"property"`
}

// parseSiteXML reads one Hadoop configuration file into kv (later keys win).
func parseSiteXML(r io.Reader, name string, kv map[string]string) error {
	var c xmlConf
	if err := xml.NewDecoder(r).Decode(&c); err != nil {
		return fmt.Errorf("parse %s: %w", name, err)
	}
	for _, p := range c.Properties {
		k := strings.TrimSpace(p.Name)
		if k == "" {
			return fmt.Errorf("parse %s: property with an empty name", name)
		}
		kv[k] = strings.TrimSpace(p.Value)
	}
	return nil
}

// readConfDir reads core-site.xml, hdfs-site.xml and yarn-site.xml from dir. A missing
// file is skipped; a directory with none of them is ErrNoConf.
func readConfDir(dir string) (map[string]string, error) {
	kv := map[string]string{}
	found := 0
	for _, f := range confFiles {
		p := filepath.Join(dir, f)
		fh, err := os.Open(p)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read hadoop conf %s: %w", p, err)
		}
		err = parseSiteXML(fh, p, kv)
		fh.Close()
		if err != nil {
			return nil, err
		}
		found++
	}
	if found == 0 {
		return nil, fmt.Errorf("read hadoop conf %s: %w (want one of %s)", dir, ErrNoConf, strings.Join(confFiles, ", "))
	}
	return kv, nil
}

var varRef = regexp.MustCompile(`\$\{([^}$]+)\}`)

// expand resolves Hadoop's ${key} references against kv (a few rounds, as Hadoop does).
func expand(kv map[string]string, v string) string {
	for i := 0; i < 20 && strings.Contains(v, "${"); i++ {
		next := varRef.ReplaceAllStringFunc(v, func(m string) string {
			k := m[2 : len(m)-1]
			if r, ok := kv[k]; ok {
				return r
			}
			return m
		})
		if next == v {
			break
		}
		v = next
	}
	return v
}

// get returns the expanded value of key, or def when it is absent or empty.
func get(kv map[string]string, key, def string) string {
	if v := expand(kv, kv[key]); v != "" {
		return v
	}
	return expand(kv, def)
}

// rmWebURL is the ResourceManager's web address (http or https per yarn.http.policy); with
// HA, the first rm-id's (useActiveRM then finds the active one).
func rmWebURL(kv map[string]string) (string, error) {
	urls, err := rmWebURLs(kv)
	if err != nil {
		return "", err
	}
	return urls[0], nil
}

// rmWebURLs lists the ResourceManagers' web addresses: one, or with
// yarn.resourcemanager.ha.enabled one per yarn.resourcemanager.ha.rm-ids entry (the
// key.<id> forms).
func rmWebURLs(kv map[string]string) ([]string, error) {
	scheme, key, port := "http", "yarn.resourcemanager.webapp.address", "8088"
	if get(kv, "yarn.http.policy", "HTTP_ONLY") == "HTTPS_ONLY" {
		scheme, key, port = "https", "yarn.resourcemanager.webapp.https.address", "8090"
	}
	suffixes := []string{""}
	if strings.EqualFold(get(kv, "yarn.resourcemanager.ha.enabled", "false"), "true") {
		suffixes = nil
		for _, id := range strings.Split(get(kv, "yarn.resourcemanager.ha.rm-ids", ""), ",") {
			if id = strings.TrimSpace(id); id != "" {
				suffixes = append(suffixes, "."+id)
			}
		}
		if len(suffixes) == 0 {
			return nil, fmt.Errorf("hadoop conf: yarn.resourcemanager.ha.enabled is true but yarn.resourcemanager.ha.rm-ids is empty")
		}
	}
	var urls []string
	for _, sfx := range suffixes {
		k := key + sfx
		addr := get(kv, k, "${yarn.resourcemanager.hostname"+sfx+"}:"+port)
		if strings.Contains(addr, "${") {
			return nil, fmt.Errorf("hadoop conf %s: cannot resolve %q (set yarn.resourcemanager.hostname%s)", k, addr, sfx)
		}
		host, p, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, fmt.Errorf("hadoop conf %s=%q: %w", k, addr, err)
		}
		if host == "0.0.0.0" || host == "" {
			host = "localhost"
		}
		urls = append(urls, scheme+"://"+net.JoinHostPort(host, p))
	}
	return urls, nil
}

// nameNodeAddr is host:port of the NameNode from fs.defaultFS (port 8020 when absent).
func nameNodeAddr(kv map[string]string) (string, error) {
	fs := get(kv, "fs.defaultFS", get(kv, "fs.default.name", ""))
	if fs == "" {
		return "", fmt.Errorf("hadoop conf fs.defaultFS: not set")
	}
	u, err := url.Parse(fs)
	if err != nil {
		return "", fmt.Errorf("hadoop conf fs.defaultFS=%q: %w", fs, err)
	}
	if u.Scheme != "hdfs" || u.Host == "" {
		return "", fmt.Errorf("hadoop conf fs.defaultFS=%q: want hdfs://host[:port]", fs)
	}
	if u.Port() == "" {
		return net.JoinHostPort(u.Hostname(), "8020"), nil
	}
	return u.Host, nil
}
