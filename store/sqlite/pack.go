package sqlite

import (
	"encoding/binary"
	"fmt"

	"github.com/klauspost/compress/s2"

	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/store/internal/frames"
)

// Before schema 6 (migrations/0006_events_rows.sql) the journal was one
// row per transition, of frames, and a row whose frames were large enough
// was stored packed: both
// columns of frames (store/internal/frames) in one S2 block, in the events column,
// behind a marker byte; the steps column is then NULL.
//
//	events: 0x00  S2 block of: uvarint(len(events frames)) events frames steps frames
//
// The records inside are the same versioned JSON as in a plain row. The
// migration to schema 6 (convertJournal) reads such rows with unpack.
//
// A plain row's events column started with the uvarint of a seq, at least 1,
// and its steps column with a record version, at least 1: neither starts
// with 0x00, so the marker tells the two kinds apart.
const packMark = 0x00

// maxUnpacked bounds what a packed row may claim to decode to, so a
// damaged length cannot make a reader allocate without end. A row held one
// transition, whose payloads above Options.BlobThreshold lived in blobs; a
// larger row was stored plain.
const maxUnpacked = 64 << 20

// isPacked reports whether a journal row's events column holds the packed
// frames of both columns.
func isPacked(col []byte) bool { return len(col) > 0 && col[0] == packMark }

// unpack splits a packed column into the row's events and steps frames,
// decoding into buf (nil: a new buffer); the frames alias the returned
// buffer. A block that does not decode is an error naming the run.
func unpack(runID string, col, buf []byte) (events, steps, out []byte, err error) {
	damaged := func(why error) error {
		return fmt.Errorf("%w: sqlite: run %s: a packed journal row does not decode (%w)", store.ErrDamaged, runID, why)
	}
	n, err := s2.DecodedLen(col[1:])
	if err != nil {
		return nil, nil, buf, damaged(err)
	}
	if n > maxUnpacked {
		return nil, nil, buf, damaged(fmt.Errorf("it claims %d bytes, more than the %d a row may hold", n, maxUnpacked))
	}
	if cap(buf) < n {
		buf = make([]byte, n)
	}
	out, err = s2.Decode(buf[:n], col[1:])
	if err != nil {
		return nil, nil, buf, damaged(err)
	}
	split, k := binary.Uvarint(out)
	if k <= 0 || split > uint64(len(out)-k) {
		return nil, nil, out, damaged(frames.ErrTruncated)
	}
	body := out[k:]
	return body[:split:split], body[split:], out, nil
}
