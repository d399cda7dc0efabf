// Command probe runs inside a YARN container in the integration tests: it records what
// the NodeManager gave it (environment, token file) as JSON in the file -out names.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
)

func main() {
	out := flag.String("out", "", "file to write the JSON report to")
	flag.Parse()
	if *out == "" {
		fmt.Fprintln(os.Stderr, "probe: -out is required")
		os.Exit(2)
	}
	report := map[string]string{"ran": "go"}
	for _, k := range []string{"CONTAINER_ID", "NM_HOST", "NM_PORT", "NM_HTTP_PORT", "LOG_DIRS",
		"LOCAL_DIRS", "USER", "PWD", "HADOOP_TOKEN_FILE_LOCATION", "XRES_IT_VALUE"} {
		report["env."+k] = os.Getenv(k)
	}
	if p := os.Getenv("HADOOP_TOKEN_FILE_LOCATION"); p != "" {
		if b, err := os.ReadFile(p); err == nil && len(b) >= 4 {
			report["tokens.magic"] = string(b[:4])
		} else if err != nil {
			report["tokens.error"] = err.Error()
		}
	}
	b, _ := json.MarshalIndent(report, "", "  ")
	if err := os.WriteFile(*out, b, 0o644); err != nil {
		fmt.Fprintf(os.Stderr, "probe: write %s: %v\n", *out, err)
		os.Exit(1)
	}
	fmt.Println("probe: wrote", *out)
}
