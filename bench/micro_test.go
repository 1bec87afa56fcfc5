package main

import (
	"strings"
	"testing"
)

func TestParseMicro(t *testing.T) {
	out := `goos: linux
goarch: amd64
pkg: github.com/stoatflow/stoatflow/luart
cpu: AMD EPYC
BenchmarkLuaCallbackTwoStrings-2   	 4778410	       353.3 ns/op	      32 B/op	       2 allocs/op
BenchmarkNoisy
BenchmarkNoisy-2   	     100	  10000000 ns/op	  12.5 MB/s
PASS
pkg: github.com/stoatflow/stoatflow/state
BenchmarkCommit10k-2   	     100	   4200000 ns/op	 1000 B/op	      20 allocs/op
ok  	github.com/stoatflow/stoatflow/state	3.1s
`
	got, err := parseMicro(strings.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 {
		t.Fatalf("%d results: %+v", len(got), got)
	}
	lua, ok := findMicro(got, "BenchmarkLuaCallbackTwoStrings")
	if !ok || lua.pkg != "github.com/stoatflow/stoatflow/luart" || lua.nsPerOp != 353.3 || lua.allocsPerOp != 2 || !lua.mem {
		t.Fatalf("lua: %+v", lua)
	}
	if noisy, _ := findMicro(got, "BenchmarkNoisy"); noisy.mem || noisy.nsPerOp != 1e7 {
		t.Fatalf("noisy: %+v", noisy)
	}
	if c, _ := findMicro(got, "BenchmarkCommit10k"); c.pkg != "github.com/stoatflow/stoatflow/state" || c.nsPerOp != 4.2e6 {
		t.Fatalf("commit: %+v", c)
	}
	if _, err := parseMicro(strings.NewReader("BenchmarkX-2 10 abc ns/op\n")); err == nil {
		t.Fatal("a malformed value was accepted")
	}
}
