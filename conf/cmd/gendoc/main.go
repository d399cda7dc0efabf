// Command gendoc writes the configuration reference generated from the
// options declared in package conf and the params every built-in driver
// declares (driver.Declare; linked here through driver/builtin) into
// docs/configuration.md, between the
// <!-- BEGIN CONFIG TABLE --> and <!-- END CONFIG TABLE --> markers.
//
//	go run ./conf/cmd/gendoc               # rewrite docs/configuration.md
//	go run ./conf/cmd/gendoc -check        # exit 1 when docs/configuration.md is stale
//	go run ./conf/cmd/gendoc -print        # print the table only
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"

	"github.com/xres/xres/conf"
	// The built-in drivers register their params in conf's registry.
	_ "github.com/xres/xres/driver/builtin"
)

func main() {
	readme := flag.String("readme", "docs/configuration.md", "file holding the table markers")
	check := flag.Bool("check", false, "only check that the file is up to date")
	printOnly := flag.Bool("print", false, "print the table to stdout and change nothing")
	flag.Parse()
	if err := run(*readme, *check, *printOnly); err != nil {
		fmt.Fprintln(os.Stderr, "gendoc:", err)
		os.Exit(1)
	}
}

func run(readme string, check, printOnly bool) error {
	if err := conf.CheckOptions(); err != nil {
		return err
	}
	if printOnly {
		_, err := fmt.Print(conf.MarkdownTable())
		return err
	}
	old, err := os.ReadFile(readme)
	if err != nil {
		return err
	}
	updated, err := conf.ReplaceTable(old)
	if err != nil {
		return fmt.Errorf("%s: %w", readme, err)
	}
	if bytes.Equal(old, updated) {
		return nil
	}
	if check {
		return fmt.Errorf("%s: config table is out of date; run go run ./conf/cmd/gendoc", readme)
	}
	return os.WriteFile(readme, updated, 0o644)
}
