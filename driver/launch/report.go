package launch

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/xres/xres/resources"
)

// EnvContainerID is set by YARN in every container.
const EnvContainerID = "CONTAINER_ID"

// reportTimeout bounds the report; the worker starts either way.
const reportTimeout = 5 * time.Second

// postReport sends the grants to url as a resources.DeviceReport; success
// is resources.ReportAccepted. It first keeps the report as
// resources.ReportFile in the first of logDirs (the container's LOG_DIRS),
// where a later AM attempt reads it. Failures are returned for the log;
// they never stop the worker.
func postReport(ctx context.Context, client *http.Client, url, container, logDirs string, grants []Grant) error {
	rep := resources.DeviceReport{Container: container, Resources: map[string][]resources.Properties{}}
	for _, g := range grants {
		rep.Resources[g.Spec.Name] = resources.PropertiesOf(g.Devices)
	}
	body, err := json.Marshal(rep)
	if err != nil {
		return fmt.Errorf("report devices to %s: %w", url, err)
	}
	var keepErr error
	if dir, _, _ := strings.Cut(logDirs, ","); dir != "" {
		if err := os.WriteFile(filepath.Join(dir, resources.ReportFile), append(body, '\n'), 0o644); err != nil {
			keepErr = fmt.Errorf("keep the device report for a later AM attempt: %w", err)
		}
	}
	if err := sendReport(ctx, client, url, body); err != nil {
		return errors.Join(err, keepErr)
	}
	return keepErr
}

// sendReport POSTs one report body to url.
func sendReport(ctx context.Context, client *http.Client, url string, body []byte) error {
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
	if !resources.ReportAccepted(resp.StatusCode) {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("report devices to %s: %s: %s", url, resp.Status, strings.TrimSpace(string(msg)))
	}
	return nil
}
