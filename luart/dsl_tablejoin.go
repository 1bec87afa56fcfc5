package luart

import (
	lua "github.com/yuin/gopher-lua"

	"github.com/stoatflow/stoatflow/pipeline"
)

// tJoin implements table:join(other, joiner [, {name=, materialized=}]), leftJoin and
// outerJoin; a second function makes a foreign-key join (dsl_fkjoin.go). The joiner is chosen by arity as for stream joins: function(v, ov) or
// function(k, v, ov), with r last.
func (rt *Runtime) tJoin(kind pipeline.TableJoinKind) lua.LGFunction {
	return func(L *lua.LState) int {
		t := checkValue[*pipeline.KTable](L, "KTable")
		var other *pipeline.KTable
		if ud, ok := L.Get(2).(*lua.LUserData); ok {
			other, _ = ud.Value.(*pipeline.KTable)
		}
		if other == nil {
			L.ArgError(2, kind.String()+" needs a KTable")
		}
		if _, ok := L.Get(4).(*lua.LFunction); ok {
			return rt.tJoinForeignKey(L, t, other, kind)
		}
		fn := L.CheckFunction(3)
		o := options(L, 4, kind.String(), storedOpts)
		out, err := t.JoinTable(other, rt.valueJoiner(fn), kind, optString(L, o, "name"), rt.materializedOpt(L, o))
		return rt.pushTable(L, out, err)
	}
}
