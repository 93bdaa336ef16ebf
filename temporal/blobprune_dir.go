package temporal

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// MinBlobAge is the least --older-than a blob prune takes: a blob younger
// than it may belong to a run whose history does not show the reference
// yet (an activity that stored its result and has not completed), or to a
// scan's listing that a new execution missed.
const MinBlobAge = time.Hour

// blobTempPrefix starts the name of BlobCodec.put's temporary files, and of
// a prune's file set aside for deletion.
const blobTempPrefix = ".blob-"

// BlobPruneResult is what PruneBlobs did, or would do (DryRun).
type BlobPruneResult struct {
	DryRun bool `json:"dry_run"`
	// Blobs and Bytes: the unreferenced blobs older than the bound that
	// were deleted (or would be), and their size.
	Blobs int   `json:"blobs"`
	Bytes int64 `json:"bytes"`
	// Temporaries: leftover temporary files older than the bound deleted.
	Temporaries int `json:"temporaries"`
	// Referenced: blobs kept because a history refers to them; Recent:
	// unreferenced blobs kept because they are newer than the bound.
	Referenced int `json:"referenced"`
	Recent     int `json:"recent"`
	// Pruned lists the deleted (or to be deleted) blobs' sha256.
	Pruned []string `json:"pruned"`
}

// PruneBlobs deletes the blobs of store dir that referenced does not name
// and whose file was last written before before, and the temporary files
// of writes older than before; with dryRun it deletes nothing and says
// what it would. Only files named like this store's (dir/ab/<64 hex
// digits> starting ab, or dir/ab/.blob-*) are touched; anything else, and
// anything not a regular file, is left alone. A blob stored again while
// the prune runs (BlobCodec.put refreshes its mtime) is put back.
func PruneBlobs(dir string, referenced map[string]bool, before time.Time, dryRun bool) (*BlobPruneResult, error) {
	res := &BlobPruneResult{DryRun: dryRun, Pruned: []string{}}
	tops, err := os.ReadDir(dir)
	if err != nil {
		return res, fmt.Errorf("blob store %s: %w", dir, err)
	}
	for _, top := range tops {
		if !top.IsDir() || len(top.Name()) != 2 || !isLowerHex(top.Name()) {
			continue
		}
		sub := filepath.Join(dir, top.Name())
		ents, err := os.ReadDir(sub)
		if err != nil {
			return res, fmt.Errorf("blob store %s: %w", dir, err)
		}
		for _, e := range ents {
			if err := pruneEntry(sub, top.Name(), e, referenced, before, res); err != nil {
				return res, fmt.Errorf("blob store %s: %w", dir, err)
			}
		}
	}
	return res, nil
}

// pruneEntry applies the prune's rule to one entry of dir/ab.
func pruneEntry(sub, prefix string, e fs.DirEntry, referenced map[string]bool, before time.Time, res *BlobPruneResult) error {
	name := e.Name()
	if !e.Type().IsRegular() {
		return nil
	}
	blob := len(name) == 64 && isLowerHex(name) && strings.HasPrefix(name, prefix)
	if !blob && !strings.HasPrefix(name, blobTempPrefix) {
		return nil
	}
	if blob && referenced[name] {
		res.Referenced++
		return nil
	}
	fi, err := e.Info()
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if !fi.ModTime().Before(before) {
		if blob {
			res.Recent++
		}
		return nil
	}
	path := filepath.Join(sub, name)
	if !blob {
		if !res.DryRun {
			if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
		}
		res.Temporaries++
		return nil
	}
	if !res.DryRun {
		gone, err := removeBlob(path, before)
		if err != nil || !gone {
			return err
		}
	}
	res.Blobs++
	res.Bytes += fi.Size()
	res.Pruned = append(res.Pruned, name)
	return nil
}

// removeBlob deletes blob path unless it was stored again since its mtime
// was read: it is renamed aside first (a put that then refreshes the
// mtime finds no file and writes it anew), and put back when its mtime,
// read after the rename, is no longer before before. gone says whether
// the blob left the store.
func removeBlob(path string, before time.Time) (gone bool, err error) {
	aside := filepath.Join(filepath.Dir(path), blobTempPrefix+"prune-"+filepath.Base(path))
	if err := os.Rename(path, aside); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return false, nil
		}
		return false, err
	}
	if fi, err := os.Stat(aside); err == nil && !fi.ModTime().Before(before) {
		if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
			return false, os.Rename(aside, path)
		}
		return false, os.Remove(aside) // written anew meanwhile: the same content
	}
	return true, os.Remove(aside)
}

func isLowerHex(s string) bool {
	for _, c := range s {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
