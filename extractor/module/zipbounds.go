package module

// zipbounds.go holds a module zip to Go's own limits on module zips
// (golang.org/x/mod/zip), by the sizes its entries declare and by the bytes
// they really inflate to, before and while anything reads it. A checksum
// proves a zip is the one the checksum database knows, not that it is small;
// with GONOSUMDB, GOPRIVATE, GOSUMDB=off or a private proxy there is no
// checksum at all, and a zip of a few hundred KB can declare or inflate to
// terabytes.

import (
	"archive/zip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"

	modzip "golang.org/x/mod/zip"
)

// ErrZipTooLarge: the module zip breaks Go's limits on module zips.
var ErrZipTooLarge = errors.New("module zip too large")

// maxZipEntry is the most bytes syncloop reads of one file of the module.
// Go limits go.mod and LICENSE to this (modzip.MaxGoMod, MaxLICENSE), and
// the module as a whole to modzip.MaxZipFile; no source file the extractor
// reads is within a hundredth of it.
const maxZipEntry = modzip.MaxGoMod

// checkZipSizes checks what the zip's entries declare: together at most
// modzip.MaxZipFile bytes uncompressed, go.mod and LICENSE at most their
// own limits.
func checkZipSizes(zr *zip.Reader, tag string) error {
	var total uint64
	for _, f := range zr.File {
		size := f.UncompressedSize64
		total += size
		if total > modzip.MaxZipFile || total < size {
			return zipTooLarge(tag, "its files declare over %d MB uncompressed together, Go's limit for a module", modzip.MaxZipFile>>20)
		}
		switch path.Base(f.Name) {
		case "go.mod":
			if size > modzip.MaxGoMod {
				return zipTooLarge(tag, "%s declares %d bytes; Go's limit is %d", f.Name, size, modzip.MaxGoMod)
			}
		case "LICENSE":
			if size > modzip.MaxLICENSE {
				return zipTooLarge(tag, "%s declares %d bytes; Go's limit is %d", f.Name, size, modzip.MaxLICENSE)
			}
		}
	}
	return nil
}

func zipTooLarge(tag, format string, args ...any) error {
	return Errorf(ErrZipTooLarge, nil, "the module zip of %s@%s is not a valid module: %s; refused before reading it (check GOPROXY, or use --source-dir DIR)", Path, tag, fmt.Sprintf(format, args...))
}

// boundedFS is the module's tree with each file read only up to the size it
// declares and at most maxZipEntry bytes, whatever it inflates to.
type boundedFS struct {
	fs.FS
	tag string
}

func (b boundedFS) Open(name string) (fs.File, error) {
	f, err := b.FS.Open(name)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if st.IsDir() {
		return f, nil
	}
	if st.Size() < 0 || st.Size() > maxZipEntry {
		f.Close()
		return nil, zipTooLarge(b.tag, "%s declares %d bytes; syncloop reads files of at most %d", name, st.Size(), maxZipEntry)
	}
	return &boundedFile{File: f, left: st.Size(), name: name, tag: b.tag}, nil
}

// ReadFile keeps fs.ReadFile on boundedFS going through Open.
func (b boundedFS) ReadFile(name string) ([]byte, error) {
	f, err := b.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

// Sub keeps fs.Sub's result bounded.
func (b boundedFS) Sub(dir string) (fs.FS, error) {
	sub, err := fs.Sub(b.FS, dir)
	if err != nil {
		return nil, err
	}
	return boundedFS{sub, b.tag}, nil
}

// boundedFile fails a read past the size its entry declared.
type boundedFile struct {
	fs.File
	left int64
	name string
	tag  string
}

func (f *boundedFile) Read(p []byte) (int, error) {
	if f.left <= 0 {
		// One byte more than declared is an error, not an end.
		var one [1]byte
		n, err := f.File.Read(one[:])
		if n > 0 || (err != nil && err != io.EOF) {
			return 0, zipTooLarge(f.tag, "%s inflates to more than the size it declares", f.name)
		}
		return 0, io.EOF
	}
	if int64(len(p)) > f.left {
		p = p[:f.left]
	}
	n, err := f.File.Read(p)
	f.left -= int64(n)
	return n, err
}
