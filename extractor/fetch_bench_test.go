package extractor

import (
	"os"
	"testing"

	"github.com/syncloop/syncloop/extractor/module"
	"golang.org/x/mod/sumdb/dirhash"
)

// BenchmarkLoadFromModcache measures Load of the default tag from a zip in
// the module cache, with the Reading cache empty every iteration:
//
//   - stamped: the zip was verified by an earlier Load (the usual case, e.g.
//     after a Schema bump or with other Symbols);
//   - verify: a first Load, hashing the zip beside the extraction;
//   - baseline-hashzip: dirhash.HashZip of the zip alone, the floor of "verify";
//   - baseline-extract: opening the zip and Extract alone, the floor of "stamped".
func BenchmarkLoadFromModcache(b *testing.B) {
	mod := linkModCache(b, DefaultTag)
	getenv := env("GOPROXY", "off", "GOMODCACHE", mod)
	zipPath, _, _ := module.ModCacheZip(getenv, DefaultTag)

	load := func(b *testing.B, stamp bool) {
		for b.Loop() {
			b.StopTimer()
			cache := b.TempDir()
			if stamp {
				if err := module.WriteStamp(cache, DefaultTag, zipPath, DefaultTagHash, VerifiedPinned); err != nil {
					b.Fatal(err)
				}
			}
			b.StartTimer()
			r, err := Load(b.Context(), Options{CacheDir: cache, Getenv: getenv})
			if err != nil || r.Source != "modcache" {
				b.Fatalf("Load = %v, %v", r, err)
			}
			b.StopTimer()
			os.RemoveAll(cache)
			b.StartTimer()
		}
	}
	b.Run("stamped", func(b *testing.B) { load(b, true) })
	b.Run("verify", func(b *testing.B) { load(b, false) })
	b.Run("baseline-hashzip", func(b *testing.B) {
		for b.Loop() {
			if h, err := dirhash.HashZip(zipPath, dirhash.Hash1); err != nil || h != DefaultTagHash {
				b.Fatal(h, err)
			}
		}
	})
	b.Run("baseline-extract", func(b *testing.B) {
		z := &module.Zip{Tag: DefaultTag, Path: zipPath, Kind: "modcache", Hash: DefaultTagHash}
		for b.Loop() {
			if _, err := extractOnly(z, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
}
