package main

// What the bytes of each object are, in the ratios of backupbench's engines/content.py:
//
//	incompressible  random bytes, fresh for every object (compress 0, dedupe 0)
//	compressible    in every 64 KiB chunk, `compress` percent zeros after random bytes;
//	                `dedupe` percent of the objects byte-identical to one of a few pool objects
//	pattern         one constant byte
//
// Backup files reach a repository compressed or encrypted; storage that compresses or
// deduplicates would otherwise be measured on data it shrinks for free.
//
// The random bytes come from a counter-based generator (wyrand: state = seed + n*gamma,
// output = a 128-bit multiply folded), seeded per object: any byte of an object can be
// computed without the ones before it, so a part of a multipart upload, a retried body and
// the checksum pass before a locked PUT all see exactly the same bytes however they are
// read. It runs at several GB/s per core (PCG about half that, ChaCha8 a quarter): the
// client must not take CPU from a server it shares the host with.

import (
	"encoding/binary"
	"io"
	"math/bits"
)

const (
	chunkSize  = 64 << 10
	dedupePool = 4 // duplicates repeat one of this many pool objects, as content.py's BlockSource
	gamma      = 0xa0761d6478bd642f
)

type Content struct {
	Kind     string // incompressible, compressible, pattern
	Compress int64  // percent of every chunk that is zeros
	Dedupe   int64  // percent of objects that are copies of a pool object
	Pattern  byte
	Seed     uint64
	SizeMin  int64 // object sizes: uniform in [SizeMin, SizeMax], a function of the object
	SizeMax  int64
}

func mix64(x uint64) uint64 { // splitmix64's finaliser: spreads a seed or a counter over 64 bits
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ (x >> 31)
}

func wyword(state uint64) uint64 {
	hi, lo := bits.Mul64(state, state^0xe7037ed1a0b428db)
	return hi ^ lo
}

// Shape of object `key`: its size, the identity its bytes derive from, and whether it carries
// the 16 bytes unique to it (a duplicate must be byte-identical to its pool object, so not).
type Shape struct {
	Size   int64
	Data   uint64
	Unique bool
}

// isDuplicate: exactly `percent` of every 100 consecutive object numbers, spread evenly, so a
// small run has the ratio asked for rather than a random draw near it.
func isDuplicate(key, percent int64) bool {
	return percent > 0 && (key+1)*percent/100 > key*percent/100
}

func (c *Content) sizeOf(data uint64) int64 {
	if c.SizeMax <= c.SizeMin {
		return c.SizeMin
	}
	span := uint64(c.SizeMax - c.SizeMin + 1)
	return c.SizeMin + int64(mix64(c.Seed^mix64(data^0x5151))%span)
}

func (c *Content) Shape(key int64) Shape {
	data, unique := uint64(key), c.Kind != "pattern"
	if c.Kind == "compressible" && isDuplicate(key, c.Dedupe) {
		data, unique = 1<<63|mix64(uint64(key))%dedupePool, false
	}
	return Shape{Size: c.sizeOf(data), Data: data, Unique: unique}
}

// randomPart is how many bytes at the start of a chunk of n bytes are random.
func (c *Content) randomPart(n int64) int64 {
	return n - n*c.Compress/100
}

// contentBody reads bytes [start, end) of one object; it is an io.Reader for a request body.
type contentBody struct {
	c          *Content
	shape      Shape
	state      uint64 // the object's generator seed
	head       [16]byte
	start, end int64
	off        int64
}

// Body of object key (whole, or the part [start, end) of it); stamp goes into the unique
// bytes so that two runs never write identical objects.
func (c *Content) Body(key int64, shape Shape, start, end int64, stamp uint64) *contentBody {
	b := &contentBody{c: c, shape: shape, state: mix64(c.Seed ^ mix64(shape.Data)), start: start, end: end, off: start}
	binary.LittleEndian.PutUint64(b.head[0:], uint64(key))
	binary.LittleEndian.PutUint64(b.head[8:], stamp)
	return b
}

func (b *contentBody) Read(p []byte) (int, error) {
	if b.off >= b.end {
		return 0, io.EOF
	}
	if rest := b.end - b.off; int64(len(p)) > rest {
		p = p[:rest]
	}
	if b.c.Kind == "pattern" {
		fillByte(p, b.c.Pattern)
	} else {
		b.fill(p, b.off)
	}
	b.off += int64(len(p))
	return len(p), nil
}

// fill writes the object's bytes from offset off into p: chunk by chunk, random then zeros.
func (b *contentBody) fill(p []byte, off int64) {
	size := b.shape.Size
	fullRandom := b.c.randomPart(chunkSize)
	for len(p) > 0 {
		chunk := off / chunkSize
		pos := off - chunk*chunkSize
		chunkLen := min(int64(chunkSize), size-chunk*chunkSize)
		random := b.c.randomPart(chunkLen)
		var n int64
		if pos < random {
			n = min(random-pos, int64(len(p)))
			b.random(p[:n], chunk*fullRandom+pos)
			if b.shape.Unique && off < int64(len(b.head)) {
				copy(p[:n], b.head[off:min(int64(len(b.head)), off+n)])
			}
		} else {
			n = min(chunkLen-pos, int64(len(p)))
			clear(p[:n])
		}
		p, off = p[n:], off+n
	}
}

// random writes the object's random stream from byte r on: byte r is byte r%8 of word r/8.
func (b *contentBody) random(p []byte, r int64) {
	word := uint64(r / 8)
	if skip := int(r % 8); skip != 0 {
		var tmp [8]byte
		binary.LittleEndian.PutUint64(tmp[:], wyword(b.state+(word+1)*gamma))
		n := copy(p, tmp[skip:])
		p, word = p[n:], word+1
	}
	for len(p) >= 8 {
		binary.LittleEndian.PutUint64(p, wyword(b.state+(word+1)*gamma))
		p, word = p[8:], word+1
	}
	if len(p) > 0 {
		var tmp [8]byte
		binary.LittleEndian.PutUint64(tmp[:], wyword(b.state+(word+1)*gamma))
		copy(p, tmp[:])
	}
}

func fillByte(p []byte, value byte) {
	if len(p) == 0 {
		return
	}
	p[0] = value
	for done := 1; done < len(p); done *= 2 {
		copy(p[done:], p[:done])
	}
}
