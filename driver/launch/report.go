package launch

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/xres/xres/resources"
)

// EnvReportURL names the ApplicationMaster's report endpoint, set in the
// container's environment by the AM; EnvContainerID is set by YARN.
const (
	EnvReportURL   = "XRES_AM_REPORT_URL"
	EnvContainerID = "CONTAINER_ID"
)

// reportTimeout bounds the report; the worker starts either way.
const reportTimeout = 5 * time.Second

// deviceReport is what the launcher POSTs to $XRES_AM_REPORT_URL after
// discovery (the AM's tracking server, yarn/am DeviceReport; answered 204):
//
//	{"container": "container_…_000002",
//	 "resources": {"gpu": [{"index": "0", "uuid": "GPU-…"}, …]}}
type deviceReport struct {
	Container string                            `json:"container"`
	Resources map[string][]resources.Properties `json:"resources"`
}

// postReport sends the grants to url. Failures are returned for the log;
// they never stop the worker.
func postReport(ctx context.Context, client *http.Client, url, container string, grants []Grant) error {
	rep := deviceReport{Container: container, Resources: map[string][]resources.Properties{}}
	for _, g := range grants {
		rep.Resources[g.Spec.Name] = resources.PropertiesOf(g.Devices)
	}
	body, err := json.Marshal(rep)
	if err != nil {
		return fmt.Errorf("report devices to %s: %w", url, err)
	}
	ctx, cancel := context.WithTimeout(ctx, reportTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("report devices to %s: %w", url, err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("report devices to %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("report devices to %s: %s: %s", url, resp.Status, strings.TrimSpace(string(msg)))
	}
	return nil
}
