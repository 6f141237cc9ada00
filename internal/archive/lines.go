package archive

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash"
	"io"
)

// lineReader reads an archive's lines, each at most max bytes: a longer
// line is refused once max bytes of it are read, never read whole. It
// hashes every byte it reads, so that the import's second pass can prove it
// wrote the file its first pass validated.
type lineReader struct {
	br  *bufio.Reader
	max int
	n   int // lines read
	// last is the length of the last line read, newline included.
	last int
	// partial: the last line read ended at the end of the file, without
	// its newline (an archive cut mid-line).
	partial bool
	buf     []byte
	hash    hash.Hash
}

func newLineReader(r io.Reader, max int) *lineReader {
	h := sha256.New()
	return &lineReader{br: bufio.NewReaderSize(io.TeeReader(r, h), 64<<10), max: max, hash: h}
}

// errLineTooLong is a line over the bound.
var errLineTooLong = errors.New("line too long")

// next returns the next line without its newline, valid until the next
// call, and io.EOF after the last. A last line without its newline is
// returned as a line (the trailer check decides whether the archive is
// whole).
func (l *lineReader) next() ([]byte, error) {
	l.buf = l.buf[:0]
	for {
		chunk, err := l.br.ReadSlice('\n')
		if len(l.buf)+len(chunk) > l.max+1 { // +1: the newline
			l.n++
			return nil, fmt.Errorf("line %d: %w: longer than %d bytes (the archive's bound on a line, docs/archive-format.md)", l.n, errLineTooLong, l.max)
		}
		l.buf = append(l.buf, chunk...)
		l.last = len(l.buf)
		switch {
		case err == nil:
			l.n++
			return bytes.TrimSuffix(l.buf, []byte("\n")), nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF):
			if len(l.buf) == 0 {
				return nil, io.EOF
			}
			l.n++
			l.partial = true
			return l.buf, nil
		default:
			return nil, err
		}
	}
}

// sum is the SHA-256 of every byte read so far.
func (l *lineReader) sum() []byte { return l.hash.Sum(nil) }
