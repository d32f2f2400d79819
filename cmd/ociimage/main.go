// Command ociimage writes the Gatehouse container image as an OCI image
// layout (a directory, and the same as a tar archive) without a container
// engine, the way ko does: one layer holding the static gatehouse binary, a
// CA bundle, /etc/passwd with the user nonroot (65532) and the data folder
// /var/lib/gatehouse, on no base image. `make image` builds the binaries
// and runs it; see "Container image" in README.md for pushing the result.
//
//	go run ./cmd/ociimage --out dist/gatehouse-oci --version v2.0.0 \
//	    --binary linux/amd64=dist/linux_amd64/gatehouse --ca-bundle /etc/ssl/certs/ca-certificates.crt
//
// The output is reproducible: file times are --created, and the same
// inputs give the same digests.
package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// OCI media types (image-spec v1.1).
const (
	mediaIndex    = "application/vnd.oci.image.index.v1+json"
	mediaManifest = "application/vnd.oci.image.manifest.v1+json"
	mediaConfig   = "application/vnd.oci.image.config.v1+json"
	mediaLayer    = "application/vnd.oci.image.layer.v1.tar+gzip"
)

// The image's layout: who runs the binary, where, and on which ports.
const (
	binPath  = "/usr/local/bin/gatehouse"
	dataDir  = "/var/lib/gatehouse"
	caPath   = "/etc/ssl/certs/ca-certificates.crt"
	nonroot  = 65532
	imageDoc = "Gatehouse: an authenticating reverse proxy in front of one web app"
)

// options are the command line.
type options struct {
	out      string            // OCI layout directory; <out>.tar is the same as an archive
	binaries map[string]string // platform "os/arch" → static gatehouse binary
	caBundle string
	version  string // image tag and org.opencontainers.image.version
	revision string // git commit
	source   string // repository URL
	created  time.Time
}

type platformFlag map[string]string

func (p platformFlag) String() string { return fmt.Sprint(map[string]string(p)) }
func (p platformFlag) Set(v string) error {
	platform, path, ok := strings.Cut(v, "=")
	if !ok || strings.Count(platform, "/") != 1 || path == "" {
		return fmt.Errorf("%q: want os/arch=path, e.g. linux/amd64=dist/linux_amd64/gatehouse", v)
	}
	p[platform] = path
	return nil
}

func main() {
	o := options{binaries: platformFlag{}}
	var created string
	fs := flag.NewFlagSet("ociimage", flag.ExitOnError)
	fs.StringVar(&o.out, "out", "dist/gatehouse-oci", "OCI image layout directory to write (replaced); the archive is <out>.tar")
	fs.Var(platformFlag(o.binaries), "binary", "os/arch=path of a static gatehouse binary (repeatable, one per platform)")
	fs.StringVar(&o.caBundle, "ca-bundle", "/etc/ssl/certs/ca-certificates.crt", "PEM bundle of trusted CAs, installed at "+caPath+" (SMTP, OAuth and ACME use it)")
	fs.StringVar(&o.version, "version", "dev", "image version: the tag in the layout and the org.opencontainers.image.version label")
	fs.StringVar(&o.revision, "revision", "", "source revision (git commit) for the org.opencontainers.image.revision label")
	fs.StringVar(&o.source, "source", "https://github.com/gatehouse-auth/gatehouse", "repository URL for the org.opencontainers.image.source label")
	fs.StringVar(&created, "created", "", "build time, RFC 3339 (default: $SOURCE_DATE_EPOCH, else now); also the time of every file")
	_ = fs.Parse(os.Args[1:])
	var err error
	if o.created, err = parseCreated(created, os.Getenv("SOURCE_DATE_EPOCH"), time.Now()); err != nil {
		fail(err)
	}
	o.created = o.created.UTC().Truncate(time.Second)
	digest, err := build(o)
	if err != nil {
		fail(err)
	}
	fmt.Printf("wrote OCI image layout %s and %s.tar: gatehouse:%s %s (%s)\n", o.out, o.out, o.version, digest, strings.Join(slices.Sorted(maps.Keys(o.binaries)), ", "))
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "ociimage:", err)
	os.Exit(1)
}

func parseCreated(flagValue, epoch string, now time.Time) (time.Time, error) {
	switch {
	case flagValue != "":
		return time.Parse(time.RFC3339, flagValue)
	case epoch != "":
		var sec int64
		if _, err := fmt.Sscan(epoch, &sec); err != nil {
			return time.Time{}, fmt.Errorf("SOURCE_DATE_EPOCH %q: %w", epoch, err)
		}
		return time.Unix(sec, 0).UTC(), nil
	}
	return now.UTC().Truncate(time.Second), nil
}

// descriptor is an OCI content descriptor.
type descriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Size        int64             `json:"size"`
	Platform    *platform         `json:"platform,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

type platform struct {
	OS           string `json:"os"`
	Architecture string `json:"architecture"`
}

// layout collects blobs in memory before writing them out.
type layout struct{ blobs map[string][]byte }

func (l *layout) add(mediaType string, data []byte) descriptor {
	sum := sha256.Sum256(data)
	d := "sha256:" + hex.EncodeToString(sum[:])
	l.blobs[d] = data
	return descriptor{MediaType: mediaType, Digest: d, Size: int64(len(data))}
}

// build writes the layout and its archive and returns the digest that the
// tag names (a manifest for one platform, an index for several).
func build(o options) (string, error) {
	if len(o.binaries) == 0 {
		return "", errors.New("no --binary given")
	}
	if o.version == "" || strings.ContainsAny(o.version, " /:@") {
		return "", fmt.Errorf("--version %q is not a tag", o.version)
	}
	ca, err := os.ReadFile(o.caBundle)
	if err != nil {
		return "", fmt.Errorf("--ca-bundle: %w (the image needs trusted CAs for SMTP, OAuth and ACME)", err)
	}
	annotations := map[string]string{
		"org.opencontainers.image.title":       "gatehouse",
		"org.opencontainers.image.description": imageDoc,
		"org.opencontainers.image.version":     o.version,
		"org.opencontainers.image.source":      o.source,
		"org.opencontainers.image.url":         o.source,
		"org.opencontainers.image.created":     o.created.UTC().Format(time.RFC3339),
	}
	if o.revision != "" {
		annotations["org.opencontainers.image.revision"] = o.revision
	}
	l := &layout{blobs: map[string][]byte{}}
	var manifests []descriptor
	for _, p := range slices.Sorted(maps.Keys(o.binaries)) {
		bin, err := os.ReadFile(o.binaries[p])
		if err != nil {
			return "", fmt.Errorf("--binary %s: %w", p, err)
		}
		goos, arch, _ := strings.Cut(p, "/")
		m, err := imageManifest(l, platform{OS: goos, Architecture: arch}, bin, ca, o.created, annotations)
		if err != nil {
			return "", err
		}
		manifests = append(manifests, m)
	}
	top := manifests[0]
	if len(manifests) > 1 {
		index, err := json.Marshal(map[string]any{"schemaVersion": 2, "mediaType": mediaIndex, "manifests": manifests, "annotations": annotations})
		if err != nil {
			return "", err
		}
		top = l.add(mediaIndex, index)
	}
	top.Annotations = map[string]string{"org.opencontainers.image.ref.name": o.version}
	index, err := json.Marshal(map[string]any{"schemaVersion": 2, "mediaType": mediaIndex, "manifests": []descriptor{top}})
	if err != nil {
		return "", err
	}
	files := map[string][]byte{
		"oci-layout": []byte(`{"imageLayoutVersion":"1.0.0"}`),
		"index.json": index,
	}
	for d, data := range l.blobs {
		files["blobs/sha256/"+strings.TrimPrefix(d, "sha256:")] = data
	}
	if err := writeDir(o.out, files); err != nil {
		return "", err
	}
	if err := writeTar(o.out+".tar", files, o.created); err != nil {
		return "", err
	}
	return top.Digest, nil
}

// imageManifest adds the layer, config and manifest of one platform.
func imageManifest(l *layout, p platform, bin, ca []byte, created time.Time, annotations map[string]string) (descriptor, error) {
	rootfs, err := layerTar(bin, ca, created)
	if err != nil {
		return descriptor{}, err
	}
	diffID := sha256.Sum256(rootfs)
	var gz bytes.Buffer
	zw, err := gzip.NewWriterLevel(&gz, gzip.BestCompression)
	if err != nil {
		return descriptor{}, err
	}
	if _, err := zw.Write(rootfs); err != nil {
		return descriptor{}, err
	}
	if err := zw.Close(); err != nil {
		return descriptor{}, err
	}
	layer := l.add(mediaLayer, gz.Bytes())
	config, err := json.Marshal(map[string]any{
		"created":      created.UTC().Format(time.RFC3339),
		"architecture": p.Architecture,
		"os":           p.OS,
		"config": map[string]any{
			"User":         fmt.Sprintf("%d:%d", nonroot, nonroot),
			"Entrypoint":   []string{binPath},
			"WorkingDir":   dataDir,
			"Env":          []string{"PATH=/usr/local/bin", "SSL_CERT_FILE=" + caPath},
			"ExposedPorts": map[string]any{"8080/tcp": struct{}{}, "9090/tcp": struct{}{}},
			"Volumes":      map[string]any{dataDir: struct{}{}},
			"Labels":       annotations,
		},
		"rootfs":  map[string]any{"type": "layers", "diff_ids": []string{"sha256:" + hex.EncodeToString(diffID[:])}},
		"history": []map[string]string{{"created": created.UTC().Format(time.RFC3339), "created_by": "cmd/ociimage: gatehouse binary, CA bundle, nonroot user"}},
	})
	if err != nil {
		return descriptor{}, err
	}
	cfg := l.add(mediaConfig, config)
	manifest, err := json.Marshal(map[string]any{
		"schemaVersion": 2,
		"mediaType":     mediaManifest,
		"config":        cfg,
		"layers":        []descriptor{layer},
		"annotations":   annotations,
	})
	if err != nil {
		return descriptor{}, err
	}
	d := l.add(mediaManifest, manifest)
	d.Platform = &p
	return d, nil
}

// layerTar is the image's only file system layer.
func layerTar(bin, ca []byte, mtime time.Time) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dir := func(name string, mode int64, uid int) error {
		return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: name + "/", Mode: mode, Uid: uid, Gid: uid, ModTime: mtime})
	}
	file := func(name string, mode int64, data []byte) error {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: mode, Size: int64(len(data)), ModTime: mtime}); err != nil {
			return err
		}
		_, err := tw.Write(data)
		return err
	}
	steps := []func() error{
		func() error { return dir("etc", 0o755, 0) },
		func() error {
			return file("etc/passwd", 0o644, []byte("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n"))
		},
		func() error { return file("etc/group", 0o644, []byte("root:x:0:\nnonroot:x:65532:\n")) },
		func() error { return dir("etc/ssl", 0o755, 0) },
		func() error { return dir("etc/ssl/certs", 0o755, 0) },
		func() error { return file(strings.TrimPrefix(caPath, "/"), 0o644, ca) },
		func() error { return dir("home", 0o755, 0) },
		func() error { return dir("home/nonroot", 0o700, nonroot) },
		func() error { return dir("tmp", 0o1777, 0) },
		func() error { return dir("usr", 0o755, 0) },
		func() error { return dir("usr/local", 0o755, 0) },
		func() error { return dir("usr/local/bin", 0o755, 0) },
		func() error { return file(strings.TrimPrefix(binPath, "/"), 0o755, bin) },
		func() error { return dir("var", 0o755, 0) },
		func() error { return dir("var/lib", 0o755, 0) },
		func() error { return dir(strings.TrimPrefix(dataDir, "/"), 0o700, nonroot) },
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// writeDir replaces dir with files.
func writeDir(dir string, files map[string][]byte) error {
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	for name, data := range files {
		path := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(path, data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// writeTar writes files as one tar archive (an "OCI archive", which
// `docker load`, `podman load` and `skopeo copy oci-archive:` read).
func writeTar(path string, files map[string][]byte, mtime time.Time) error {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	names := slices.Sorted(maps.Keys(files))
	for _, name := range append([]string{"blobs/", "blobs/sha256/"}, names...) {
		if strings.HasSuffix(name, "/") {
			if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: name, Mode: 0o755, ModTime: mtime}); err != nil {
				return err
			}
			continue
		}
		data := files[name]
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o644, Size: int64(len(data)), ModTime: mtime}); err != nil {
			return err
		}
		if _, err := io.Copy(tw, bytes.NewReader(data)); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return os.WriteFile(path, buf.Bytes(), 0o644)
}
