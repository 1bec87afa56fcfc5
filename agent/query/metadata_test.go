package query

import (
	"fmt"
	"testing"
)

func TestMetadataKeepsHeaderOrder(t *testing.T) {
	hs, e := metadataParams("header.b=2&isolation=READ_COMMITTED&header.a=1&header.b=%2F3")
	if e != nil {
		t.Fatal(e)
	}
	if got := fmt.Sprint(hs); got != "[{b [50]} {a [49]} {b [47 51]}]" {
		t.Fatalf("headers %s", got)
	}
	for _, q := range []string{"header.=1", "other=1", "header.a=%zz"} {
		if _, e := metadataParams(q); e == nil || e.code != "bad_parameter" {
			t.Fatalf("%q: %v", q, e)
		}
	}
}
