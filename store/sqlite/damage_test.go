package sqlite_test

import (
	"context"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/store/sqlite"
)

// crashCopy leaves in a fresh folder what a crashed process leaves: a
// database file whose older runs were checkpointed into it, and a -wal
// file holding the newer ones. It returns the database path.
func crashCopy(t *testing.T) string {
	t.Helper()
	live := filepath.Join(t.TempDir(), "rein.db")
	s, err := sqlite.Open(context.Background(), live, nil)
	if err != nil {
		t.Fatal(err)
	}
	fillRuns(t, s, 6, 20<<10)
	if err := s.Close(); err != nil { // checkpointed into the file, WAL gone
		t.Fatal(err)
	}
	if s, err = sqlite.Open(context.Background(), live, nil); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	fillMore(t, s)
	dir := t.TempDir()
	for _, suffix := range []string{"", "-wal"} {
		b, err := os.ReadFile(live + suffix)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "rein.db"+suffix), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "rein.db")
}

// fillMore commits a few more small runs (a few WAL transactions).
func fillMore(t *testing.T, s *sqlite.Store) {
	t.Helper()
	for i := range 5 {
		if _, _, err := s.CreateRun(context.Background(), &store.CreateRunParams{ID: "later-" + string(rune('a'+i)), Flow: "f", FlowText: []byte("name: f")}); err != nil {
			t.Fatal(err)
		}
	}
}

func wantDamaged(t *testing.T, path, want string) {
	t.Helper()
	s, err := sqlite.Open(context.Background(), path, nil)
	if err == nil {
		s.Close()
		t.Fatalf("Open accepted a damaged database (want %q)", want)
	}
	if !errors.Is(err, store.ErrDamaged) || !strings.Contains(err.Error(), want) {
		t.Fatalf("Open: %v\nwant store.ErrDamaged and %q", err, want)
	}
	r, err := sqlite.Check(context.Background(), path)
	if err != nil || r.OK() {
		t.Fatalf("Check = %+v, %v; want problems", r, err)
	}
}

// walFrames returns the offsets of the -wal file's frames and its page size.
func walFrames(t *testing.T, path string) (int, []int64) {
	t.Helper()
	b, err := os.ReadFile(path + "-wal")
	if err != nil {
		t.Fatal(err)
	}
	pageSize := int(binary.BigEndian.Uint32(b[8:]))
	var offs []int64
	for off := 32; off+24+pageSize <= len(b); off += 24 + pageSize {
		if string(b[off+8:off+16]) != string(b[16:24]) {
			break
		}
		offs = append(offs, int64(off))
	}
	if len(offs) < 4 {
		t.Fatalf("the WAL holds %d frames, want several", len(offs))
	}
	return pageSize, offs
}

func corrupt(t *testing.T, path string, at int64, b []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(b, at); err != nil {
		t.Fatal(err)
	}
}

func TestSoundCrashCopyOpens(t *testing.T) {
	t.Parallel()
	path := crashCopy(t)
	r, err := sqlite.Check(context.Background(), path)
	if err != nil || !r.OK() || len(r.Notes) != 0 || r.WALCommits == 0 {
		t.Fatalf("Check = %+v, %v", r, err)
	}
	s, err := sqlite.Open(context.Background(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.GetRun(context.Background(), "later-e"); err != nil {
		t.Errorf("the WAL's last run: %v", err)
	}
}

func TestTruncatedDatabaseIsRefused(t *testing.T) {
	t.Parallel()
	path := crashCopy(t)
	fi, _ := os.Stat(path)
	if err := os.Truncate(path, fi.Size()/2/4096*4096); err != nil {
		t.Fatal(err)
	}
	wantDamaged(t, path, "it was truncated")
}

func TestEmptiedDatabaseIsRefused(t *testing.T) {
	t.Parallel()
	path := crashCopy(t)
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
	wantDamaged(t, path, "the database file is empty, but its write-ahead log holds")
}

func TestOverwrittenHeaderIsRefused(t *testing.T) {
	t.Parallel()
	path := crashCopy(t)
	corrupt(t, path, 0, []byte("this is not the header of any database"))
	wantDamaged(t, path, "does not start with the SQLite header")
}

func TestPartlyTruncatedPageIsRefused(t *testing.T) {
	t.Parallel()
	path := crashCopy(t)
	fi, _ := os.Stat(path)
	if err := os.Truncate(path, fi.Size()-100); err != nil {
		t.Fatal(err)
	}
	wantDamaged(t, path, "not a whole number of 4096-byte pages")
}

// A frame in the middle of the log that fails its checksum makes SQLite
// drop the committed transactions after it: refused, and Check says so.
func TestDamagedWALFrameIsRefused(t *testing.T) {
	t.Parallel()
	path := crashCopy(t)
	_, offs := walFrames(t, path)
	corrupt(t, path+"-wal", offs[1]+24+100, []byte{0xde, 0xad, 0xbe, 0xef})
	wantDamaged(t, path, "frame 2 of its write-ahead log fails its checksum")
}

// A last frame that fails its checksum is what a process leaves when it
// stops while writing a transaction: SQLite ignores it, Open goes on, and
// Check reports it as a note.
func TestTornWALTailIsReported(t *testing.T) {
	t.Parallel()
	path := crashCopy(t)
	_, offs := walFrames(t, path)
	last := offs[len(offs)-1]
	corrupt(t, path+"-wal", last+24+8, []byte{1, 2, 3, 4, 5, 6, 7, 8})
	r, err := sqlite.Check(context.Background(), path)
	if err != nil || !r.OK() || len(r.Notes) != 1 || !strings.Contains(r.Notes[0], "fail their checksum and are ignored") {
		t.Fatalf("Check = %+v, %v", r, err)
	}
	s, err := sqlite.Open(context.Background(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
}

// integrity_check finds damage inside a page that the headers do not show.
func TestCheckRunsIntegrityCheck(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "rein.db")
	s, err := sqlite.Open(context.Background(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	fillRuns(t, s, 6, 20<<10)
	fillMore(t, s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := sqlite.Check(context.Background(), path)
	if err != nil || !r.OK() || r.Pages == 0 {
		t.Fatalf("Check of a sound file = %+v, %v", r, err)
	}
	// Scribble over the middle of page 2 (the first table's root).
	f, _ := os.OpenFile(path, os.O_RDWR, 0)
	junk := strings.Repeat("\xff", 2000)
	if _, err := f.WriteAt([]byte(junk), 4096+1000); err != nil {
		t.Fatal(err)
	}
	f.Close()
	r, err = sqlite.Check(context.Background(), path)
	if err != nil || r.OK() || !strings.Contains(strings.Join(r.Problems, "\n"), "integrity_check") {
		t.Fatalf("Check of a scribbled file = %+v, %v", r, err)
	}
}

// Without a log beside it, an overwritten header is still told from a
// file that is no database at all: the rest of the first page is SQLite's.
func TestOverwrittenHeaderWithoutWAL(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "rein.db")
	s, err := sqlite.Open(context.Background(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	fillMore(t, s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	corrupt(t, path, 0, []byte("overwritten....."))
	wantDamaged(t, path, "the header was overwritten")

	other := filepath.Join(t.TempDir(), "notes.txt")
	if err := os.WriteFile(other, []byte(strings.Repeat("just some text\n", 100)), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := sqlite.Open(context.Background(), other, nil); err == nil || errors.Is(err, store.ErrDamaged) || !strings.Contains(err.Error(), "is not a SQLite database") {
		t.Errorf("Open of a text file: %v", err)
	}
	if _, err := sqlite.Check(context.Background(), other); err == nil || !strings.Contains(err.Error(), "is not a SQLite database") {
		t.Errorf("Check of a text file: %v", err)
	}
}
