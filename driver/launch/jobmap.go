package launch

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/sirupsen/logrus"

	"github.com/xres/xres/resources/params"
)

// jobMapping is the files written into a GPU resource's
// metrics.job-mapping-dir while the worker runs: one per GPU it holds,
// named by the GPU's index ("0"; a MIG instance "0:1" as "0.1"), holding
// the container id and a newline: dcgm-exporter's --hpc-job-mapping-dir
// format (a file named by the GPU index, one job per line).
type jobMapping struct {
	files     []string
	container string
	log       logrus.FieldLogger
}

// writeJobMapping writes the job-mapping files of grants whose resource
// sets metrics.job-mapping-dir. A file that cannot be written is logged
// and left out: the mapping never stops the worker.
func writeJobMapping(grants []Grant, container string, log logrus.FieldLogger) *jobMapping {
	if container == "" {
		return nil
	}
	m := &jobMapping{container: container, log: log}
	for _, g := range grants {
		dir := params.JobMappingDir(g.Spec.Params)
		if dir == "" {
			continue
		}
		for _, d := range g.Devices {
			index, ok := d.Property("index")
			if !ok || index == "" {
				continue
			}
			name := strings.ReplaceAll(index, ":", ".")
			if strings.ContainsAny(name, "/\x00") || name == "." || name == ".." {
				continue
			}
			p := filepath.Join(dir, name)
			if err := writeMappingFile(dir, p, container); err != nil {
				log.WithError(err).WithField("key", params.GPUJobMappingDir.Key(g.Spec.Name)).Warn("could not write the GPU's job-mapping file; its DCGM metrics carry no hpc_job")
				continue
			}
			m.files = append(m.files, p)
		}
	}
	return m
}

// writeMappingFile writes container into p, in folder dir: a folder that is
// a symlink, or a p that is not a regular file of ours (a symlink, another
// user's), is refused; one of ours left by a launcher that was killed is
// replaced (written beside, then renamed over).
func writeMappingFile(dir, p, container string) error {
	fi, err := os.Lstat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("job-mapping folder %s does not exist (create it for dcgm-exporter's --hpc-job-mapping-dir)", dir)
	case err != nil:
		return err
	case !fi.IsDir():
		return fmt.Errorf("job-mapping folder %s is not a folder (a symlink is not followed)", dir)
	}
	if fi, err := os.Lstat(p); err == nil {
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !fi.Mode().IsRegular() || (ok && int(st.Uid) != os.Getuid()) {
			return fmt.Errorf("%s exists and is not a file of this user's: left alone", p)
		}
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(p)+".tmp*")
	if err != nil {
		return err
	}
	_, werr := tmp.WriteString(container + "\n")
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr, os.Chmod(tmp.Name(), 0o644)); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if err := os.Rename(tmp.Name(), p); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return nil
}

// remove removes the files that still name this container (one rewritten
// since by another container's launcher is left to it).
func (m *jobMapping) remove() {
	if m == nil {
		return
	}
	for _, p := range m.files {
		b, err := os.ReadFile(p)
		if err != nil || strings.TrimSpace(string(b)) != m.container {
			continue
		}
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			m.log.WithError(err).WithField("file", p).Warn("could not remove the GPU's job-mapping file")
		}
	}
}
