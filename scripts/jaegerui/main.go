// Command jaegerui writes Jaeger UI's built web assets into a directory,
// for Jaeger's all-in-one to serve with --query.static-files
// (scripts/run-jaeger.sh, `make jaeger-ui`).
//
// The all-in-one that scripts/ensure-jaeger.sh builds from Jaeger's Go
// module has no UI: Jaeger's release builds embed the UI's assets, which
// the module does not carry, so its page says "This is not the Jaeger UI
// you are looking for!"; and the npm registry has no built Jaeger UI. The
// Go module github.com/tonistiigi/jaeger-ui-rest carries them (Jaeger UI
// v1.68.0, built and gzipped; docker buildx serves its traces with it):
// this program reads them through its file system, which decompresses
// them, and writes them out.
//
// It is a module of its own so that this dependency stays out of
// seckill's.
package main

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path"
	"path/filepath"

	jaegerui "github.com/tonistiigi/jaeger-ui-rest"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: jaegerui DIR   (writes Jaeger UI's assets into DIR)")
		os.Exit(2)
	}
	n, err := writeTree(jaegerui.FS(jaegerui.Config{}), "/", os.Args[1])
	if err == nil && n == 0 {
		err = errors.New("no assets found")
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "jaegerui:", err)
		os.Exit(1)
	}
}

// writeTree copies the files under name in src into dir, and returns how
// many it wrote.
func writeTree(src http.FileSystem, name, dir string) (int, error) {
	f, err := src.Open(name)
	if err != nil {
		return 0, err
	}
	defer func() { _ = f.Close() }()
	info, err := f.Stat()
	if err != nil {
		return 0, err
	}
	if !info.IsDir() {
		return 1, writeFile(f, filepath.Join(dir, filepath.FromSlash(name)))
	}
	entries, err := f.Readdir(-1)
	if err != nil {
		return 0, err
	}
	written := 0
	for _, e := range entries {
		n, err := writeTree(src, path.Join(name, e.Name()), dir)
		written += n
		if err != nil {
			return written, err
		}
	}
	return written, nil
}

func writeFile(r io.Reader, dst string) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	w, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(w, r); err != nil {
		_ = w.Close()
		return fmt.Errorf("write %s: %w", dst, err)
	}
	return w.Close()
}
