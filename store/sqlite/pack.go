package sqlite

import (
	"encoding/binary"
	"fmt"

	"github.com/klauspost/compress/s2"

	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/store/internal/frames"
)

// A journal row whose frames are large enough is stored packed: both
// columns of frames (store/internal/frames) in one S2 block, in the events column,
// behind a marker byte; the steps column is then NULL.
//
//	events: 0x00  S2 block of: uvarint(len(events frames)) events frames steps frames
//
// The records inside are the same versioned JSON as in a plain row; only
// the bytes on disk shrink (a W5 transition's row from ~1,080 to ~570).
// One block for both columns matters: a step's output digest stands in its
// settled event, in its step record and in the next step's started event,
// and the preview repeats the output, so most of what the second column
// says the first said already. Fewer bytes a row mean fewer pages a run
// fills: every page the journal grows by costs a commit two WAL frames
// besides the page's own (its parent and page 1), and with many runs in flight
// every frame is CPU the single writer spends (docs/performance.md).
//
// A plain row's events column starts with the uvarint of a seq, at least 1,
// and its steps column with a record version, at least 1: neither starts
// with 0x00, so the marker tells the two kinds apart, and rows written
// before schema 3 read as they always did.
const packMark = 0x00

// packMin is the size of frames below which a row is stored plain: a row
// that small fills a sixteenth of a page at most, and S2 finds little to
// take out of a record or two.
const packMin = 256

// pack returns the packed column of a row's frames in dst's storage, and
// ok false when packing would not make the row smaller, or the row is
// larger than a reader accepts packed (store it plain). scratch is a
// buffer for the block's input; both are returned for reuse.
func pack(dst, scratch, events, steps []byte) (packed, dstBuf, scratchBuf []byte, ok bool) {
	plain := len(events) + len(steps)
	if plain < packMin || plain+binary.MaxVarintLen64 > maxUnpacked {
		return nil, dst, scratch, false
	}
	in := binary.AppendUvarint(scratch[:0], uint64(len(events)))
	in = append(append(in, events...), steps...)
	n := 1 + s2.MaxEncodedLen(len(in))
	if cap(dst) < n {
		dst = make([]byte, n)
	}
	dst = dst[:n]
	dst[0] = packMark
	out := dst[:1+len(s2.Encode(dst[1:], in))]
	if len(out) >= plain {
		return nil, dst, in, false
	}
	return out, dst, in, true
}

// maxUnpacked bounds what a packed row may claim to decode to, so a
// damaged length cannot make a reader allocate without end. A row holds one
// transition, whose payloads above Options.BlobThreshold live in blobs; a
// larger row (a threshold set past it) is stored plain.
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
