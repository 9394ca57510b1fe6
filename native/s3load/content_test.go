package main

import (
	"bytes"
	"compress/flate"
	"io"
	"testing"
)

func readAll(t *testing.T, b *contentBody, step int) []byte {
	t.Helper()
	buf := make([]byte, step)
	var out []byte
	for {
		n, err := b.Read(buf)
		out = append(out, buf[:n]...)
		if err == io.EOF {
			return out
		}
	}
}

func deflated(data []byte) float64 {
	var out bytes.Buffer
	w, _ := flate.NewWriter(&out, 6)
	w.Write(data)
	w.Close()
	return float64(out.Len()) / float64(len(data))
}

// The same bytes however the body is read: parts, resends and checksums rely on it.
func TestBodyIsTheSameWhateverTheReadSize(t *testing.T) {
	c := &Content{Kind: "compressible", Compress: 30, Seed: 7, SizeMin: 300_001}
	shape := c.Shape(5)
	whole := readAll(t, c.Body(5, shape, 0, shape.Size, 1), 1<<20)
	for _, step := range []int{1, 7, 8, 4095, 65536} {
		if got := readAll(t, c.Body(5, shape, 0, shape.Size, 1), step); !bytes.Equal(got, whole) {
			t.Fatalf("read in steps of %d differs", step)
		}
	}
	part := readAll(t, c.Body(5, shape, 100_003, 200_000, 1), 999)
	if !bytes.Equal(part, whole[100_003:200_000]) {
		t.Fatal("a part differs from the same bytes of the whole object")
	}
}

func TestRatios(t *testing.T) {
	for _, tc := range []struct {
		content   Content
		low, high float64
	}{
		{Content{Kind: "incompressible", Seed: 1, SizeMin: 1 << 20}, 0.99, 1.01},
		{Content{Kind: "compressible", Compress: 50, Seed: 1, SizeMin: 1 << 20}, 0.45, 0.55},
		{Content{Kind: "pattern", Pattern: 0xaa, SizeMin: 1 << 20}, 0, 0.01},
	} {
		shape := tc.content.Shape(3)
		data := readAll(t, tc.content.Body(3, shape, 0, shape.Size, 9), 1<<16)
		if r := deflated(data); r < tc.low || r > tc.high {
			t.Errorf("%s/%d: ratio %.3f", tc.content.Kind, tc.content.Compress, r)
		}
	}
}

func TestObjectsDifferAndDuplicatesAreExact(t *testing.T) {
	c := &Content{Kind: "compressible", Dedupe: 30, Seed: 3, SizeMin: 4096}
	seen := map[string]int{}
	for key := int64(0); key < 1000; key++ {
		shape := c.Shape(key)
		seen[string(readAll(t, c.Body(key, shape, 0, shape.Size, 1), 4096))]++
	}
	copies := 0
	for _, n := range seen {
		if n > 1 {
			copies += n
		}
	}
	if copies != 300 || len(seen) != 700+dedupePool {
		t.Fatalf("%d objects in duplicate groups, %d distinct", copies, len(seen))
	}
	plain := &Content{Kind: "incompressible", Seed: 3, SizeMin: 64}
	a, b := readAll(t, plain.Body(1, plain.Shape(1), 0, 64, 1), 64), readAll(t, plain.Body(2, plain.Shape(2), 0, 64, 1), 64)
	if bytes.Equal(a[16:], b[16:]) {
		t.Fatal("two objects share their random bytes")
	}
}

func TestSizesAreUniformInTheRange(t *testing.T) {
	c := &Content{Kind: "incompressible", Seed: 5, SizeMin: 1000, SizeMax: 2000}
	low, high := int64(1<<62), int64(0)
	for key := int64(0); key < 2000; key++ {
		s := c.Shape(key).Size
		low, high = min(low, s), max(high, s)
		if s != c.Shape(key).Size {
			t.Fatal("size is not a function of the object")
		}
	}
	if low < 1000 || high > 2000 || low > 1010 || high < 1990 {
		t.Fatalf("sizes %d..%d", low, high)
	}
}
