package launch

import (
	"encoding/json"
	"errors"
	"os"

	"github.com/sirupsen/logrus"

	"github.com/xres/xres/conf"
	"github.com/xres/xres/resources"
)

// TEMPORARY until resources.Parse / resources.WriteInfoFile land.
func parseSpecs(cfg *conf.Config, strict bool, log logrus.FieldLogger) ([]resources.Spec, error) {
	return nil, errors.New("resources.Parse pending")
}

// WriteInfoFile writes the info file workers read.
func WriteInfoFile(path string, infos map[string][]resources.Info) error {
	m := map[string][]map[string]string{}
	for n, list := range infos {
		for _, in := range list {
			p := map[string]string{}
			for _, k := range in.Keys() {
				p[k], _ = in.Property(k)
			}
			m[n] = append(m[n], p)
		}
	}
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}
