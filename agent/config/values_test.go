package config

import (
	"strings"
	"testing"
	"time"
)

func TestConvertDuration(t *testing.T) {
	k := &Key{Type: TypeDuration}
	ok := map[any]time.Duration{
		int64(250): 250 * time.Millisecond, "250": 250 * time.Millisecond, "250ms": 250 * time.Millisecond,
		"10s": 10 * time.Second, "5m": 5 * time.Minute, "1h": time.Hour, "1m30s": 90 * time.Second,
	}
	for raw, want := range ok {
		got, err := convert(k, raw, "")
		if err != nil || got != want {
			t.Errorf("%v: got %v, %v; want %v", raw, got, err, want)
		}
	}
	for _, raw := range []any{"abc", true, 1.5, int64(-1), "-5s"} {
		if _, err := convert(k, raw, ""); err == nil {
			t.Errorf("%v: no error", raw)
		}
	}
	never := &Key{Type: TypeDuration, Min: -1}
	if got, err := convert(never, int64(-1), ""); err != nil || got != -time.Millisecond {
		t.Errorf("-1: %v %v", got, err)
	}
	if _, err := convert(never, int64(-2), ""); err == nil || !strings.Contains(err.Error(), "must be -1 or at least 0") {
		t.Errorf("-2: %v", err)
	}
}

func TestConvertList(t *testing.T) {
	k := &Key{Type: TypeList}
	for _, raw := range []any{"a:1, b:2", []any{"a:1", "b:2"}, "a:1,,b:2,"} {
		got, err := convert(k, raw, "")
		if err != nil || strings.Join(got.([]string), "|") != "a:1|b:2" {
			t.Errorf("%v: %v %v", raw, got, err)
		}
	}
	if _, err := convert(k, []any{"a", int64(1)}, ""); err == nil {
		t.Error("mixed list accepted")
	}
	opt := byFull["streams.topology.optimization"]
	if _, err := convert(opt, "all, nope", ""); err == nil || !strings.Contains(err.Error(), `invalid value "nope": allowed values are "none", "all"`) {
		t.Errorf("got %v", err)
	}
}

func TestConvertScalars(t *testing.T) {
	i := &Key{Type: TypeInt}
	if _, err := convert(i, int64(1)<<40, ""); err == nil || !strings.Contains(err.Error(), "32-bit") {
		t.Errorf("int range: %v", err)
	}
	if v, err := convert(&Key{Type: TypeLong}, " 42 ", ""); err != nil || v != int64(42) {
		t.Errorf("long from string: %v %v", v, err)
	}
	b := &Key{Type: TypeBool}
	if v, err := convert(b, "TRUE", ""); err != nil || v != true {
		t.Errorf("bool from string: %v %v", v, err)
	}
	if _, err := convert(b, "yes", ""); err == nil || !strings.Contains(err.Error(), "expected true or false") {
		t.Errorf("bool: %v", err)
	}
	acks := byFull["streams.acks"]
	for raw, want := range map[any]string{int64(-1): "all", "ALL": "all", int64(1): "1", "0": "0"} {
		if v, err := convert(acks, raw, ""); err != nil || v != want {
			t.Errorf("acks %v: %v %v", raw, v, err)
		}
	}
	if _, err := convert(acks, "2", ""); err == nil || !strings.Contains(err.Error(), `allowed values are "all", "1", "0"`) {
		t.Errorf("acks 2: %v", err)
	}
}

func TestParseJAAS(t *testing.T) {
	j, err := ParseJAAS(`org.apache.kafka.common.security.plain.PlainLoginModule required username="alice" password="p \"q\" \\ ;=";`)
	if err != nil || j.Module != PlainLoginModule || j.Username != "alice" || j.Password != `p "q" \ ;=` {
		t.Fatalf("got %+v %v", j, err)
	}
	j, err = ParseJAAS("org.apache.kafka.common.security.scram.ScramLoginModule optional\n  username=bob password=pw tokenauth=\"false\" ;")
	if err != nil || j.Module != ScramLoginModule || j.Username != "bob" || j.Password != "pw" {
		t.Fatalf("got %+v %v", j, err)
	}
	for in, want := range map[string]string{
		"":                                     "expected a login module class",
		"M":                                    "expected a control flag",
		`M maybe username="u";`:                "invalid control flag",
		`M required username="u" password="p"`: `expected ";" at the end`,
		`M required username="u;`:              "unterminated quoted value",
		`M required username "u";`:             "expected option=value",
		`M required username="u";`:             "expected username and password",
	} {
		if _, err := ParseJAAS(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: got %v, want %q", in, err, want)
		}
	}
}
