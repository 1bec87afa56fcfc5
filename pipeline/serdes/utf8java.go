package serdes

// Kafka's StringDeserializer is new String(bytes, UTF_8): bytes that are not well-formed
// UTF-8 become U+FFFD, never an error. How many U+FFFD a malformed sequence becomes is the
// JDK's own rule (java.lang.String's UTF-8 decoder, the same as sun.nio.cs.UTF_8 with
// CodingErrorAction.REPLACE), which differs from the Unicode recommendation (one U+FFFD per
// maximal subpart) in places. decodeJava follows the JDK's rule; testdata/utf8java.txt holds
// the answers of Java 17 and 25 to every case the rule distinguishes, and the tests check
// decodeJava against them byte for byte. What the JDK does, in order:
//
//   - a lead byte that starts no sequence (0x80–0xC1, 0xF8–0xFF) is one U+FFFD;
//   - C2–DF: with a continuation byte after it, one character; otherwise one U+FFFD for the
//     lead alone, and the next byte is read again (at the end of the input: one U+FFFD);
//   - E0–EF with two bytes after it: if the three are malformed (the second byte not a
//     continuation, E0 followed by 80–9F, or the third not a continuation) one U+FFFD for
//     the lead alone, or for lead and second byte when the second is a fitting continuation;
//     a well-formed surrogate (ED A0–BF xx) is ONE U+FFFD for all three bytes (the Unicode
//     recommendation gives three);
//   - E0–EF with fewer than two bytes after it: one U+FFFD for the lead if the next byte
//     does not fit it (and that byte is read again), else one U+FFFD for the rest of the
//     input;
//   - F0–F7 with three bytes after it: one character if the three are continuations and the
//     code point is in U+10000–U+10FFFF; else one U+FFFD for 1, 2 or 3 bytes: the lead alone
//     when it is above F4 or the second byte does not fit it (F0 needs 90–BF, F4 80–8F, any
//     needs a continuation), lead and second when the third is not a continuation, all
//     three when the fourth is not;
//   - F0–F7 with fewer than three bytes after it: one U+FFFD for the lead alone when it is
//     above F4 or the next byte does not fit it (that byte is read again); otherwise one
//     U+FFFD for the lead and the next byte, and a third byte that is not a continuation is
//     read again, while one that is ends the input with them.
const replacement = "\uFFFD"

// decodeJava decodes b as Java's new String(b, UTF_8) does, as UTF-8. Well-formed UTF-8 is
// the same in both (Go's utf8.Valid and the JDK refuse the same overlongs, surrogates and
// code points above U+10FFFF), so callers check that first and need this only for the rest.
func decodeJava(b []byte) string {
	out := make([]byte, 0, len(b)+len(b)/2)
	n := len(b)
	for i := 0; i < n; {
		b1 := b[i]
		switch {
		case b1 < 0x80:
			out = append(out, b1)
			i++
		case b1 >= 0xC2 && b1 <= 0xDF:
			if i+1 < n && continuation(b[i+1]) {
				out = append(out, b[i:i+2]...)
				i += 2
				continue
			}
			out = append(out, replacement...)
			i++
		case b1 >= 0xE0 && b1 <= 0xEF:
			if i+2 < n {
				b2, b3 := b[i+1], b[i+2]
				switch {
				case !fits3(b1, b2):
					out = append(out, replacement...)
					i++
				case !continuation(b3):
					out = append(out, replacement...)
					i += 2
				case b1 == 0xED && b2 >= 0xA0:
					out = append(out, replacement...) // a surrogate: one for the three bytes
					i += 3
				default:
					out = append(out, b[i:i+3]...)
					i += 3
				}
				continue
			}
			out = append(out, replacement...)
			if i+1 < n && !fits3(b1, b[i+1]) {
				i++
				continue
			}
			i = n
		case b1 >= 0xF0 && b1 <= 0xF7:
			if i+3 < n {
				b2, b3, b4 := b[i+1], b[i+2], b[i+3]
				switch {
				case !fits4(b1, b2):
					i++
				case !continuation(b3):
					i += 2
				case !continuation(b4):
					i += 3
				default:
					out = append(out, b[i:i+4]...)
					i += 4
					continue
				}
				out = append(out, replacement...)
				continue
			}
			out = append(out, replacement...)
			if i+1 < n && !fits4(b1, b[i+1]) || b1 > 0xF4 {
				i++
				continue
			}
			i += 2
			if i < n && !continuation(b[i]) {
				continue
			}
			i = n
		default:
			out = append(out, replacement...)
			i++
		}
	}
	return string(out)
}

func continuation(b byte) bool { return b&0xC0 == 0x80 }

// fits3 reports whether b2 may follow the lead b1 of a 3-byte sequence: a continuation,
// above 9F after E0 (shorter forms are overlong). Surrogates (ED A0–BF) fit here: the JDK
// refuses them after decoding the three bytes.
func fits3(b1, b2 byte) bool {
	return continuation(b2) && !(b1 == 0xE0 && b2 < 0xA0)
}

// fits4 reports whether b2 may follow the lead b1 of a 4-byte sequence: a continuation,
// 90–BF after F0 (shorter forms are overlong), 80–8F after F4 (more is above U+10FFFF),
// and no lead above F4.
func fits4(b1, b2 byte) bool {
	switch {
	case b1 > 0xF4 || !continuation(b2):
		return false
	case b1 == 0xF0:
		return b2 >= 0x90
	case b1 == 0xF4:
		return b2 < 0x90
	}
	return true
}
