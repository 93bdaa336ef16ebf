package sqlite

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
)

// The write-ahead log's format (https://sqlite.org/fileformat.html#the_write_ahead_log):
// a 32-byte header, then frames of a 24-byte header and a page. Every
// frame carries the WAL's salts and a checksum that runs on from the
// previous frame's; SQLite's recovery keeps the frames up to the last
// commit frame before the first one that fails, and ignores the rest.
const (
	walHeaderSize      = 32
	walFrameHeaderSize = 24
	walMagicLE         = 0x377f0682 // checksums over little-endian words
	walMagicBE         = 0x377f0683 // checksums over big-endian words
)

// walScan is what a read of the WAL found.
type walScan struct {
	// pageSize is 0 when the file is missing or empty (nothing to read).
	pageSize int
	// valid frames in a row from the start, and the last commit among them.
	valid, commits int
	// damaged is the 1-based number of the first frame of this WAL's
	// generation (its salts) whose checksum fails; 0 when none does.
	damaged int
	// lost counts the commit frames after damaged that carry this WAL's
	// salts and whose own checksum holds: transactions that were committed
	// and that SQLite's recovery will drop.
	lost int
	// badHeader says why the header is unusable ("" when it is fine).
	badHeader string
}

// scanWAL reads path (a -wal file) and checks every frame as SQLite's
// recovery does. A missing file is an empty scan.
func scanWAL(path string) (walScan, error) {
	var w walScan
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return w, nil
	}
	if err != nil {
		return w, err
	}
	defer f.Close()
	hdr := make([]byte, walHeaderSize)
	if _, err := io.ReadFull(f, hdr); err != nil {
		return w, nil // shorter than a header: SQLite ignores it too
	}
	magic := binary.BigEndian.Uint32(hdr)
	pageSize := int(binary.BigEndian.Uint32(hdr[8:]))
	if magic != walMagicLE && magic != walMagicBE {
		w.badHeader = fmt.Sprintf("its header does not start with the WAL magic number (%#x)", magic)
		return w, nil
	}
	if pageSize < 512 || pageSize > 65536 || pageSize&(pageSize-1) != 0 {
		w.badHeader = fmt.Sprintf("its header gives a page size of %d", pageSize)
		return w, nil
	}
	big := magic == walMagicBE
	s1, s2 := walChecksum(big, hdr[:24], 0, 0)
	if s1 != binary.BigEndian.Uint32(hdr[24:]) || s2 != binary.BigEndian.Uint32(hdr[28:]) {
		// SQLite ignores a WAL whose header fails: nothing in it counts.
		w.badHeader = "its header fails its checksum"
		return w, nil
	}
	w.pageSize = pageSize
	salt := hdr[16:24]
	frame := make([]byte, walFrameHeaderSize+pageSize)
	for n := 1; ; n++ {
		if _, err := io.ReadFull(f, frame); err != nil {
			if err == io.EOF || err == io.ErrUnexpectedEOF {
				return w, nil
			}
			return w, err
		}
		if string(frame[8:16]) != string(salt) {
			return w, nil // a frame of an earlier generation: the log ends here
		}
		stored1, stored2 := binary.BigEndian.Uint32(frame[16:]), binary.BigEndian.Uint32(frame[20:])
		c1, c2 := walChecksum(big, frame[:8], s1, s2)
		c1, c2 = walChecksum(big, frame[walFrameHeaderSize:], c1, c2)
		pgno, commit := binary.BigEndian.Uint32(frame), binary.BigEndian.Uint32(frame[4:])
		ok := pgno != 0 && c1 == stored1 && c2 == stored2
		switch {
		case w.damaged == 0 && ok:
			w.valid = n
			if commit != 0 {
				w.commits++
			}
		case w.damaged == 0:
			w.damaged = n
		case ok && commit != 0:
			w.lost++ // intact on its own (seeded with the frame before it)
		}
		s1, s2 = stored1, stored2
	}
}

// walChecksum runs SQLite's WAL checksum over b (a multiple of 8 bytes)
// from s1, s2.
func walChecksum(big bool, b []byte, s1, s2 uint32) (uint32, uint32) {
	order := binary.ByteOrder(binary.LittleEndian)
	if big {
		order = binary.BigEndian
	}
	for i := 0; i+8 <= len(b); i += 8 {
		s1 += order.Uint32(b[i:]) + s2
		s2 += order.Uint32(b[i+4:]) + s1
	}
	return s1, s2
}

// strandedCommits counts the commit frames in the -wal file at path whose
// header is unusable: frames of pageSize (the database's) that carry the
// first frame's salts, in a row from the first, with a page number. SQLite
// ignores a log whose header fails, so the transactions they commit would
// be dropped; a log that never got past its header holds none.
func strandedCommits(path string, pageSize int) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	if _, err := f.Seek(walHeaderSize, io.SeekStart); err != nil {
		return 0, err
	}
	frame := make([]byte, walFrameHeaderSize+pageSize)
	var salt []byte
	commits := 0
	for {
		if _, err := io.ReadFull(f, frame); err != nil {
			if err == io.EOF || err == io.ErrUnexpectedEOF {
				return commits, nil
			}
			return 0, err
		}
		if salt == nil {
			salt = append([]byte(nil), frame[8:16]...)
		}
		if string(frame[8:16]) != string(salt) || binary.BigEndian.Uint32(frame) == 0 {
			return commits, nil
		}
		if binary.BigEndian.Uint32(frame[4:]) != 0 {
			commits++
		}
	}
}
