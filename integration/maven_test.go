//go:build integration

package integration

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// mavenBuild builds the Maven project integration/<name> (package, and the
// class path written to target/classpath.txt) when target/<jar> is missing,
// older than pom.xml or a file under src/, or the class path names a file
// that is gone. It tries offline first: ~/.m2 and the minicluster's build
// hold most of it already. It returns the project folder and the class path.
func mavenBuild(b testing.TB, name, jar string) (dir string, classpath []string) {
	dir, err := filepath.Abs(name)
	if err != nil {
		b.Fatal(err)
	}
	cpFile := filepath.Join(dir, "target", "classpath.txt")
	readCP := func() ([]string, error) {
		cp, err := os.ReadFile(cpFile)
		if err != nil {
			return nil, err
		}
		return strings.Split(strings.TrimSpace(string(cp)), ":"), nil
	}
	stale := func() bool {
		out, err := os.Stat(filepath.Join(dir, "target", jar))
		if err != nil {
			return true
		}
		cp, err := readCP()
		if err != nil {
			return true
		}
		for _, e := range cp {
			if _, err := os.Stat(e); err != nil {
				return true
			}
		}
		stale := false
		_ = filepath.WalkDir(filepath.Join(dir, "src"), func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				if in, err := d.Info(); err == nil && in.ModTime().After(out.ModTime()) {
					stale = true
				}
			}
			return nil
		})
		if in, err := os.Stat(filepath.Join(dir, "pom.xml")); err != nil || in.ModTime().After(out.ModTime()) {
			stale = true
		}
		return stale
	}
	if stale() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
		defer cancel()
		args := []string{"-B", "-q", "-f", filepath.Join(dir, "pom.xml"),
			"package", "dependency:build-classpath", "-Dmdep.outputFile=" + cpFile}
		if out, err := exec.CommandContext(ctx, "mvn", append([]string{"-o"}, args...)...).CombinedOutput(); err != nil {
			b.Logf("%s: offline build failed, trying online: %v\n%s", name, err, tailLines(out, 20))
			if out, err := exec.CommandContext(ctx, "mvn", args...).CombinedOutput(); err != nil {
				b.Fatalf("%s: mvn %s: %v\n%s", name, strings.Join(args, " "), err, tailLines(out, 40))
			}
		}
	}
	classpath, err = readCP()
	if err != nil {
		b.Fatalf("%s: %v", name, err)
	}
	return dir, classpath
}

// javaBin is $JAVA_HOME/bin/java, else java from PATH.
func javaBin() string {
	if h := os.Getenv("JAVA_HOME"); h != "" {
		return filepath.Join(h, "bin", "java")
	}
	return "java"
}

func tailLines(b []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
