package serdes

import "unsafe"

// A deserialised string costs two allocations: its bytes (string(data)) and the box of its
// header when it becomes the `any` a serde returns (runtime convTstring). boxedString puts
// both in one object for strings of up to maxBoxedString bytes, the bulk of keys and values:
// a struct of the header and an array holding the bytes, the header pointing into its own
// array, and an interface made to point to that header.
//
// This is sound because:
//   - the object is an ordinary typed allocation: the collector sees the header's pointer
//     (to the same object) and the interface's data word, so the bytes live as long as the
//     string or any copy of it;
//   - an interface holding a string points to a string header, which is what the data word
//     addresses; the runtime never writes through it, and nothing else holds the array;
//   - the bytes are copied from data, so the string shares no memory with it (pipeline.Serde).
// TestBoxedString checks values at and around every size, a collection, and the allocations.

// eface is the layout of an empty interface.
type eface struct{ typ, data unsafe.Pointer }

// stringType is the type word of a string in an empty interface.
var stringType = func() unsafe.Pointer {
	var v any = ""
	return (*eface)(unsafe.Pointer(&v)).typ
}()

// The boxes fill the allocator's size classes of 32 to 512 bytes exactly.
type (
	box16 struct {
		s string
		b [16]byte
	}
	box48 struct {
		s string
		b [48]byte
	}
	box112 struct {
		s string
		b [112]byte
	}
	box240 struct {
		s string
		b [240]byte
	}
	box496 struct {
		s string
		b [496]byte
	}
)

// maxBoxedString is the longest string boxedString makes in one allocation.
const maxBoxedString = 496

// boxedString is any(string(data)) in one allocation when data is 1..maxBoxedString bytes.
func boxedString(data []byte) any {
	n := len(data)
	var s *string
	switch {
	case n == 0 || n > maxBoxedString:
		return string(data)
	case n <= 16:
		b := new(box16)
		b.s, s = unsafe.String(&b.b[0], copy(b.b[:], data)), &b.s
	case n <= 48:
		b := new(box48)
		b.s, s = unsafe.String(&b.b[0], copy(b.b[:], data)), &b.s
	case n <= 112:
		b := new(box112)
		b.s, s = unsafe.String(&b.b[0], copy(b.b[:], data)), &b.s
	case n <= 240:
		b := new(box240)
		b.s, s = unsafe.String(&b.b[0], copy(b.b[:], data)), &b.s
	default:
		b := new(box496)
		b.s, s = unsafe.String(&b.b[0], copy(b.b[:], data)), &b.s
	}
	var out any
	o := (*eface)(unsafe.Pointer(&out))
	o.typ, o.data = stringType, unsafe.Pointer(s)
	return out
}
