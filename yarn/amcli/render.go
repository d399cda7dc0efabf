package amcli

import (
	"context"
	"flag"
	"fmt"

	"github.com/sirupsen/logrus"

	"github.com/xres/xres/conf/suggest"
	"github.com/xres/xres/resources"
	"github.com/xres/xres/resources/k8spod"
)

// cmdRender prints what another cluster manager would be given for the
// same configuration; today a Kubernetes worker pod template.
func cmdRender(ctx context.Context, args []string, e *env) error {
	fs := flag.NewFlagSet("render", flag.ContinueOnError)
	var c common
	c.register(fs, true)
	image := fs.String("image", "", "the worker image, holding container-launcher (required)")
	name := fs.String("name", "", "the pod's name (default xres-worker)")
	launcher := fs.String("launcher", "", "container-launcher's path in the image (default: container-launcher on its PATH)")
	launcherConf := fs.String("launcher-conf", "", "the configuration's path in the image, passed as the launcher's --conf (default: its $FLINK_CONF_DIR)")
	strict := fs.Bool("strict", false, "turn configuration warnings into errors")
	pos, worker, err := parse(fs, args)
	if err != nil {
		return err
	}
	switch {
	case len(pos) == 0:
		return fmt.Errorf("%w: which manager? (am render kubernetes …)", errUsage)
	case pos[0] != "kubernetes" || len(pos) > 1:
		msg := fmt.Sprintf("am render %q: only kubernetes is rendered", pos[0])
		if m := suggest.DidYouMean(pos[0], []string{"kubernetes"}); m != "" {
			msg += "; " + m
		}
		return fmt.Errorf("%w: %s", errUsage, msg)
	case *image == "":
		return fmt.Errorf("%w: --image is required (the worker image holding container-launcher)", errUsage)
	case len(worker) == 0:
		return fmt.Errorf("%w: no worker command (after --)", errUsage)
	}
	if err := c.apply(e); err != nil {
		return err
	}
	cfg, err := c.load(e)
	if err != nil {
		return err
	}
	opts := k8spod.PodOptions{Name: *name, Image: *image, Launcher: *launcher, Worker: worker}
	if *launcherConf != "" {
		opts.LauncherArgs = []string{"--conf", *launcherConf}
	}
	warn := logrus.New()
	warn.SetOutput(e.stderr)
	out, err := k8spod.PodFromConfig(cfg, opts, resources.ParseOptions{Strict: *strict, Log: warn})
	if err != nil {
		return configError{err}
	}
	if _, err := e.stdout.Write(out); err != nil {
		return fmt.Errorf("write pod template: %w", err)
	}
	return nil
}
