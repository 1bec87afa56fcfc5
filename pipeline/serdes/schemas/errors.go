package schemas

import (
	"fmt"
	"unicode/utf8"
)

// CutText is s cut to at most n bytes (on a UTF-8 boundary) with a note of its length, as
// the Lua runtime cuts its error messages: text a registry sends, or a schema quoted by its
// parser, can be megabytes, and an error is logged, shown and dead-lettered per record.
func CutText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	note := fmt.Sprintf(" ... [cut from %d bytes]", len(s))
	cut := max(n-len(note), 0)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + note
}

// CutError is err with its text cut by CutText; errors.Is and errors.As still see err.
func CutError(err error, n int) error {
	if err == nil || len(err.Error()) <= n {
		return err
	}
	return &cutError{text: CutText(err.Error(), n), err: err}
}

type cutError struct {
	text string
	err  error
}

func (e *cutError) Error() string { return e.text }
func (e *cutError) Unwrap() error { return e.err }
