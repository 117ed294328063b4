package module

import (
	"encoding/json"
	"os"
	"path/filepath"
)

// WriteFileAtomic writes data to path through a temporary file in the same
// directory and a rename, so path never holds a partial file.
func WriteFileAtomic(path string, data []byte) (err error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if _, err := f.Write(data); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Chmod(f.Name(), 0o644); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

// A Stamp records that syncloop hashed a module-cache zip and found
// the hash it checked it against (Verified says which), so an unchanged zip
// (same path, size and modification time) is not hashed, nor looked up in the
// checksum database, again: hashing a 20 MB zip means inflating ~100 MB,
// several times the cost of extracting a Reading from it.
type Stamp struct {
	Zip      string `json:"zip"`
	Size     int64  `json:"size"`
	ModTime  int64  `json:"mod_time_ns"`
	Hash     string `json:"hash"`
	Verified string `json:"verified"` // a Verified* value, never VerifiedNone
}

func stampPath(dir, tag string) string {
	return filepath.Join(dir, "verified", tag+".json")
}

// stampFor describes the zip at zipPath as it is now.
func stampFor(zipPath, hash, verified string) (Stamp, error) {
	fi, err := os.Stat(zipPath)
	if err != nil {
		return Stamp{}, err
	}
	return Stamp{Zip: zipPath, Size: fi.Size(), ModTime: fi.ModTime().UnixNano(), Hash: hash, Verified: verified}, nil
}

// ReadStamp returns the stamp of the zip at zipPath if it was verified and
// has not changed since.
func ReadStamp(dir, tag, zipPath string) (Stamp, bool) {
	data, err := os.ReadFile(stampPath(dir, tag))
	if err != nil {
		return Stamp{}, false
	}
	var old Stamp
	if json.Unmarshal(data, &old) != nil || old.Hash == "" || old.Verified == "" || old.Verified == VerifiedNone {
		return Stamp{}, false
	}
	now, err := stampFor(zipPath, old.Hash, old.Verified)
	return old, err == nil && old == now
}

// WriteStamp records that the zip at zipPath hashes to hash, checked as
// verified says.
func WriteStamp(dir, tag, zipPath, hash, verified string) error {
	s, err := stampFor(zipPath, hash, verified)
	if err != nil {
		return err
	}
	data, err := json.Marshal(s)
	if err != nil {
		return err
	}
	return WriteFileAtomic(stampPath(dir, tag), data)
}
