package sqlite

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzDamage: whatever bytes the database file and its write-ahead log
// hold, the checks Open makes before SQLite reads them never panic.
func FuzzDamage(f *testing.F) {
	wal := make([]byte, walHeaderSize+walFrameHeaderSize+512)
	copy(wal, []byte{0x37, 0x7f, 0x06, 0x82, 0, 0x2d, 0xe2, 0x18, 0, 0, 2, 0})
	f.Add([]byte(sqliteMagic+"\x02\x00"), wal)
	f.Add([]byte{}, []byte{})
	f.Fuzz(func(t *testing.T, db, wal []byte) {
		path := filepath.Join(t.TempDir(), "rein.db")
		if err := os.WriteFile(path, db, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path+"-wal", wal, 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := damage(path); err != nil {
			t.Fatal(err)
		}
	})
}
