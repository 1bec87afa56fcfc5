package luart

import (
	"fmt"

	lua "github.com/yuin/gopher-lua"

	"github.com/stoatflow/stoatflow/pipeline"
)

// luaSerde is a serde written in Lua: stoat.serde{serialize = function(topic, headers, value)
// return bytes end, deserialize = function(topic, headers, bytes) return value end}.
type luaSerde struct {
	rt          *Runtime
	serialize   *lua.LFunction
	deserialize *lua.LFunction
	where       string
}

func (rt *Runtime) newLuaSerde(L *lua.LState) int {
	o := options(L, 1, "stoat.serde", serdeSpecOpts)
	s := &luaSerde{rt: rt, serialize: optFunction(L, o, "serialize"), deserialize: optFunction(L, o, "deserialize"), where: rt.where()}
	if s.serialize == nil || s.deserialize == nil {
		L.RaiseError("stoat.serde needs both serialize and deserialize functions")
	}
	ud := L.NewUserData()
	ud.Value = s
	L.Push(ud)
	return 1
}

func (s *luaSerde) Name() string { return "lua serde defined at " + s.where }

func (s *luaSerde) Serialize(topic string, headers pipeline.Headers, value any) ([]byte, error) {
	if value == nil {
		return nil, nil
	}
	L := s.rt.L
	L.Push(s.serialize)
	L.Push(lua.LString(topic))
	L.Push(s.rt.headersTable(headers))
	L.Push(s.rt.toLua(value))
	if err := s.rt.pcall(3, 1); err != nil {
		return nil, err
	}
	switch ret := s.rt.pop().(type) {
	case lua.LString:
		return []byte(ret), nil
	case *lua.LNilType:
		return nil, nil
	default:
		return nil, fmt.Errorf("%s: serialize must return a string of bytes, not a %s", defined(s.serialize), ret.Type())
	}
}

func (s *luaSerde) Deserialize(topic string, headers pipeline.Headers, data []byte) (any, error) {
	if data == nil {
		return nil, nil
	}
	L := s.rt.L
	L.Push(s.deserialize)
	L.Push(lua.LString(topic))
	L.Push(s.rt.headersTable(headers))
	L.Push(lua.LString(data))
	if err := s.rt.pcall(3, 1); err != nil {
		return nil, err
	}
	v, err := s.rt.fromLua(s.rt.pop())
	if err != nil {
		return nil, fmt.Errorf("%s: deserialize returned %w", defined(s.deserialize), err)
	}
	return v, nil
}
