package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// image is an OCI layout read back from disk, each blob checked against
// its digest and size.
type image struct {
	t   *testing.T
	dir string
}

func (im image) blob(d descriptor) []byte {
	im.t.Helper()
	data, err := os.ReadFile(filepath.Join(im.dir, "blobs", "sha256", strings.TrimPrefix(d.Digest, "sha256:")))
	if err != nil {
		im.t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	if "sha256:"+hex.EncodeToString(sum[:]) != d.Digest || int64(len(data)) != d.Size {
		im.t.Fatalf("blob %s: content does not match its descriptor (size %d, want %d)", d.Digest, len(data), d.Size)
	}
	return data
}

func (im image) json(data []byte, v any) {
	im.t.Helper()
	if err := json.Unmarshal(data, v); err != nil {
		im.t.Fatal(err)
	}
}

type manifestDoc struct {
	MediaType   string            `json:"mediaType"`
	Config      descriptor        `json:"config"`
	Layers      []descriptor      `json:"layers"`
	Manifests   []descriptor      `json:"manifests"`
	Annotations map[string]string `json:"annotations"`
}

type configDoc struct {
	Architecture string `json:"architecture"`
	OS           string `json:"os"`
	Config       struct {
		User         string            `json:"User"`
		Entrypoint   []string          `json:"Entrypoint"`
		WorkingDir   string            `json:"WorkingDir"`
		ExposedPorts map[string]any    `json:"ExposedPorts"`
		Labels       map[string]string `json:"Labels"`
	} `json:"config"`
	RootFS struct {
		DiffIDs []string `json:"diff_ids"`
	} `json:"rootfs"`
}

func testOptions(t *testing.T, platforms ...string) options {
	dir := t.TempDir()
	o := options{
		out: filepath.Join(dir, "out", "gatehouse-oci"), binaries: map[string]string{}, caBundle: filepath.Join(dir, "ca.pem"),
		version: "v2.3.4", revision: "0123abcd", source: "https://github.com/gatehouse-auth/gatehouse",
		created: time.Date(2026, 11, 26, 4, 0, 0, 0, time.UTC),
	}
	if err := os.WriteFile(o.caBundle, []byte("-----BEGIN CERTIFICATE-----\nfake\n-----END CERTIFICATE-----\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range platforms {
		bin := filepath.Join(dir, strings.ReplaceAll(p, "/", "_"))
		if err := os.WriteFile(bin, []byte("binary for "+p), 0o755); err != nil {
			t.Fatal(err)
		}
		o.binaries[p] = bin
	}
	return o
}

// One platform: index.json tags the manifest with the version; the config
// runs the binary as nonroot in the data folder and carries the OCI labels;
// the one layer holds the binary, the CA bundle and the nonroot user, with
// the digests of the layout right.
func TestImageLayout(t *testing.T) {
	o := testOptions(t, "linux/amd64")
	digest, err := build(o)
	if err != nil {
		t.Fatal(err)
	}
	im := image{t, o.out}
	layoutFile, err := os.ReadFile(filepath.Join(o.out, "oci-layout"))
	if err != nil || string(layoutFile) != `{"imageLayoutVersion":"1.0.0"}` {
		t.Fatalf("oci-layout: %q %v", layoutFile, err)
	}
	indexJSON, err := os.ReadFile(filepath.Join(o.out, "index.json"))
	if err != nil {
		t.Fatal(err)
	}
	var index manifestDoc
	im.json(indexJSON, &index)
	if len(index.Manifests) != 1 || index.Manifests[0].Annotations["org.opencontainers.image.ref.name"] != "v2.3.4" ||
		index.Manifests[0].Digest != digest || index.Manifests[0].MediaType != mediaManifest {
		t.Fatalf("index.json %s: want one manifest %s tagged v2.3.4", indexJSON, digest)
	}
	if p := index.Manifests[0].Platform; p == nil || p.OS != "linux" || p.Architecture != "amd64" {
		t.Errorf("platform %+v, want linux/amd64", p)
	}
	var manifest manifestDoc
	im.json(im.blob(index.Manifests[0]), &manifest)
	var config configDoc
	im.json(im.blob(manifest.Config), &config)
	c := config.Config
	if config.OS != "linux" || config.Architecture != "amd64" || c.User != "65532:65532" || strings.Join(c.Entrypoint, " ") != "/usr/local/bin/gatehouse" ||
		c.WorkingDir != "/var/lib/gatehouse" || c.ExposedPorts["8080/tcp"] == nil || c.ExposedPorts["9090/tcp"] == nil {
		t.Errorf("config %+v", config)
	}
	for k, want := range map[string]string{
		"org.opencontainers.image.version":  "v2.3.4",
		"org.opencontainers.image.revision": "0123abcd",
		"org.opencontainers.image.source":   "https://github.com/gatehouse-auth/gatehouse",
		"org.opencontainers.image.created":  "2026-11-26T04:00:00Z",
		"org.opencontainers.image.title":    "gatehouse",
	} {
		if c.Labels[k] != want || manifest.Annotations[k] != want {
			t.Errorf("label %s = %q, annotation %q; want %q", k, c.Labels[k], manifest.Annotations[k], want)
		}
	}
	if len(manifest.Layers) != 1 || manifest.Layers[0].MediaType != mediaLayer {
		t.Fatalf("layers %+v, want one gzip layer", manifest.Layers)
	}
	zr, err := gzip.NewReader(bytes.NewReader(im.blob(manifest.Layers[0])))
	if err != nil {
		t.Fatal(err)
	}
	rootfs, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(rootfs)
	if len(config.RootFS.DiffIDs) != 1 || config.RootFS.DiffIDs[0] != "sha256:"+hex.EncodeToString(sum[:]) {
		t.Errorf("diff_ids %q do not match the layer", config.RootFS.DiffIDs)
	}
	entries := map[string]*tar.Header{}
	contents := map[string]string{}
	tr := tar.NewReader(bytes.NewReader(rootfs))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(tr)
		entries[h.Name], contents[h.Name] = h, string(b)
		if !h.ModTime.Equal(o.created) {
			t.Errorf("%s: time %v, want --created %v", h.Name, h.ModTime, o.created)
		}
	}
	for _, want := range []struct {
		name    string
		mode    int64
		uid     int
		content string
	}{
		{"usr/local/bin/gatehouse", 0o755, 0, "binary for linux/amd64"},
		{"etc/ssl/certs/ca-certificates.crt", 0o644, 0, "-----BEGIN CERTIFICATE-----\nfake\n-----END CERTIFICATE-----\n"},
		{"var/lib/gatehouse/", 0o700, 65532, ""},
		{"tmp/", 0o1777, 0, ""},
	} {
		h := entries[want.name]
		if h == nil || h.Mode != want.mode || h.Uid != want.uid || contents[want.name] != want.content {
			t.Errorf("layer entry %s = %+v %q; want mode %o uid %d", want.name, h, contents[want.name], want.mode, want.uid)
		}
	}
	if !strings.Contains(contents["etc/passwd"], "nonroot:x:65532:65532:") {
		t.Errorf("/etc/passwd has no nonroot user: %q", contents["etc/passwd"])
	}

	// The archive holds the same layout.
	f, err := os.Open(o.out + ".tar")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	archived := map[string]bool{}
	for tr := tar.NewReader(f); ; {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		archived[h.Name] = true
	}
	for _, name := range []string{"oci-layout", "index.json", "blobs/sha256/" + strings.TrimPrefix(digest, "sha256:"), "blobs/sha256/" + strings.TrimPrefix(manifest.Layers[0].Digest, "sha256:")} {
		if !archived[name] {
			t.Errorf("%s.tar lacks %s", o.out, name)
		}
	}
}

// Several platforms: the tag names an index of one manifest per platform.
// The same inputs give the same digest.
func TestImageMultiPlatformAndReproducible(t *testing.T) {
	o := testOptions(t, "linux/amd64", "linux/arm64")
	digest, err := build(o)
	if err != nil {
		t.Fatal(err)
	}
	im := image{t, o.out}
	var top manifestDoc
	indexJSON, _ := os.ReadFile(filepath.Join(o.out, "index.json"))
	im.json(indexJSON, &top)
	if len(top.Manifests) != 1 || top.Manifests[0].MediaType != mediaIndex || top.Manifests[0].Digest != digest {
		t.Fatalf("index.json %s: want the tag on an image index", indexJSON)
	}
	var index manifestDoc
	im.json(im.blob(top.Manifests[0]), &index)
	var platforms []string
	for _, m := range index.Manifests {
		var manifest manifestDoc
		im.json(im.blob(m), &manifest)
		var config configDoc
		im.json(im.blob(manifest.Config), &config)
		if m.Platform == nil || m.Platform.Architecture != config.Architecture {
			t.Errorf("platform %+v, config architecture %s", m.Platform, config.Architecture)
		}
		platforms = append(platforms, config.OS+"/"+config.Architecture)
	}
	if strings.Join(platforms, " ") != "linux/amd64 linux/arm64" {
		t.Errorf("platforms %q", platforms)
	}
	again, err := build(o)
	if err != nil || again != digest {
		t.Errorf("second build: %s %v, want the same digest %s", again, err, digest)
	}
}

func TestImageRefusesBadInput(t *testing.T) {
	o := testOptions(t)
	if _, err := build(o); err == nil {
		t.Error("built without a binary")
	}
	o = testOptions(t, "linux/amd64")
	o.caBundle = filepath.Join(t.TempDir(), "none.pem")
	if _, err := build(o); err == nil || !strings.Contains(err.Error(), "--ca-bundle") {
		t.Errorf("missing CA bundle: %v", err)
	}
	o = testOptions(t, "linux/amd64")
	o.version = "latest:1"
	if _, err := build(o); err == nil {
		t.Error("accepted a version that is no tag")
	}
	if err := (platformFlag{}).Set("amd64"); err == nil {
		t.Error("accepted a platform without os/")
	}
}
