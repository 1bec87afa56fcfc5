package luart

import (
	"io"
	"math/rand/v2"
	"testing"

	lua "github.com/yuin/gopher-lua"
)

// string.lower and string.upper give what gopher-lua's give, and the same errors, on ASCII
// in every case, non-ASCII letters, invalid UTF-8, numbers and non-strings; an unchanged
// string comes back as the argument's own value.
func TestStringCaseMatchesGopherLua(t *testing.T) {
	rt, err := New(Options{Stdout: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	ref := lua.NewState()
	defer ref.Close()
	inputs := []lua.LValue{lua.LString(""), lua.LString("word"), lua.LString("WORD"), lua.LString("MiXeD 123 -_@[`{~"),
		lua.LString("straße ÄÖÜ àéî"), lua.LString("ǅ ǈ ΣΑΣ"), lua.LString("\xff\xfeabc\x80"), lua.LString("a\x00B"),
		lua.LNumber(12), lua.LNumber(1.5), lua.LNil, lua.LTrue, ref.NewTable()}
	rnd := rand.New(rand.NewPCG(1, 2))
	alphabet := []string{"a", "z", "A", "Z", "@", "[", "`", "{", "0", " ", "é", "É", "ß", "\xc3", "\x80", "İ", "ı", "K"}
	for range 2000 {
		s := ""
		for range rnd.IntN(12) {
			s += alphabet[rnd.IntN(len(alphabet))]
		}
		inputs = append(inputs, lua.LString(s))
	}
	call := func(L *lua.LState, name string, arg lua.LValue) (lua.LValue, error) {
		fn := L.GetField(L.GetGlobal("string"), name)
		err := L.CallByParam(lua.P{Fn: fn, NRet: 1, Protect: true}, arg)
		if err != nil {
			return nil, err
		}
		return L.Get(-1), nil
	}
	for _, name := range []string{"lower", "upper"} {
		for _, in := range inputs {
			got, gotErr := call(rt.L, name, in)
			want, wantErr := call(ref, name, in)
			if (gotErr != nil) != (wantErr != nil) {
				t.Fatalf("string.%s(%q): error %v, gopher-lua's %v", name, in.String(), gotErr, wantErr)
			}
			if gotErr != nil {
				continue
			}
			rt.L.Pop(1)
			ref.Pop(1)
			if got.Type() != lua.LTString || got.String() != want.String() {
				t.Fatalf("string.%s(%q) = %q, gopher-lua's %q", name, in.String(), got.String(), want.String())
			}
		}
	}
}

// Lowering a lower-case ASCII string allocates no more than a function returning its
// argument: the argument is returned.
func TestLowerOfLowerCaseASCIIAllocatesNothing(t *testing.T) {
	rt, err := New(Options{Stdout: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	L := rt.L
	arg := lua.LValue(lua.LString("lowebo 0000012345 1700000000000 0123456789"))
	allocs := func(fn lua.LValue) float64 {
		return testing.AllocsPerRun(100, func() {
			if err := L.CallByParam(lua.P{Fn: fn, NRet: 1, Protect: true}, arg); err != nil {
				t.Fatal(err)
			}
			L.Pop(1)
		})
	}
	identity := allocs(L.NewFunction(func(L *lua.LState) int { L.Push(L.Get(1)); return 1 }))
	if got := allocs(L.GetField(L.GetGlobal("string"), "lower")); got != identity {
		t.Fatalf("%v allocations per call, want %v (those of the call itself)", got, identity)
	}
}
