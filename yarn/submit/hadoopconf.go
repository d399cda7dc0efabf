package submit

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"os"
	"regexp"

	"github.com/xres/xres/conf"
)

// HadoopConfName is the link name of the client's resolved Hadoop
// configuration, shipped to the AM alone (AMSpec.HadoopConf): the AM's
// container often has no HADOOP_CONF_DIR, and the AM must still reach this
// cluster's scheduler, web proxy (yarn.web-proxy.address, the RM's web
// addresses, yarn.http.policy) and file system as the client resolved them.
const HadoopConfName = "xres-hadoop-site.xml"

// hadoopSecretKey matches the keys never shipped to the AM: passwords,
// secret and account keys, credential stores. The AM needs none of them,
// and the staged copy would be one more place holding them.
var hadoopSecretKey = regexp.MustCompile(`(?i)(password|secret|credential|account\.key|\.pass$)`)

// ShippedHadoopKey reports whether key goes into the AM's copy of the
// client's Hadoop configuration.
func ShippedHadoopKey(key string) bool { return !hadoopSecretKey.MatchString(key) }

// MarshalHadoopConf renders the keys hc's files (and Set) gave a value, ${…}
// expanded as the client resolved them, as a Hadoop configuration file
// (core-site.xml format); built-in defaults are left out (the AM has the
// same), and so are the keys ShippedHadoopKey refuses.
func MarshalHadoopConf(hc *conf.HadoopConfig) ([]byte, error) {
	type property struct {
		Name  string `xml:"name"`
		Value string `xml:"value"`
	}
	doc := struct {
		XMLName xml.Name   `xml:"configuration"`
		Props   []property `xml:"property"`
	}{}
	for _, k := range hc.Keys() {
		if src, _ := hc.Source(k); src == conf.HadoopSourceDefault || !ShippedHadoopKey(k) {
			continue
		}
		v, _ := hc.Get(k)
		doc.Props = append(doc.Props, property{Name: k, Value: v})
	}
	var b bytes.Buffer
	b.WriteString(xml.Header)
	b.WriteString("<!-- the submitting client's resolved Hadoop configuration (xres), for the AM -->\n")
	enc := xml.NewEncoder(&b)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return nil, fmt.Errorf("write the AM's Hadoop configuration: %w", err)
	}
	b.WriteByte('\n')
	return b.Bytes(), nil
}

// writeHadoopConf writes MarshalHadoopConf(hc) to a fresh local file, mode
// 0600, for staging; remove deletes it again.
func writeHadoopConf(hc *conf.HadoopConfig) (path string, remove func(), err error) {
	data, err := MarshalHadoopConf(hc)
	if err != nil {
		return "", nil, err
	}
	f, err := os.CreateTemp("", "xres-hadoop-site-*.xml")
	if err != nil {
		return "", nil, fmt.Errorf("write the AM's Hadoop configuration: %w", err)
	}
	path = f.Name()
	remove = func() { _ = os.Remove(path) }
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		remove()
		return "", nil, fmt.Errorf("write the AM's Hadoop configuration: %w", err)
	}
	return path, remove, nil
}

// ReadShippedHadoopConf reads the configuration file the client shipped
// (HadoopConfName in the AM's folder) as properties, named by path and line.
func ReadShippedHadoopConf(path string) ([]conf.HadoopProperty, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read the client's Hadoop configuration: %w", err)
	}
	defer f.Close()
	props, err := conf.ReadHadoopXML(f, path)
	if err != nil {
		return nil, fmt.Errorf("read the client's Hadoop configuration: %w", err)
	}
	return props, nil
}
