package luart

import (
	lua "github.com/yuin/gopher-lua"

	"github.com/stoatflow/stoatflow/pipeline"
)

// tJoinForeignKey implements table:join(other, fkFn, joiner [, {name=, materialized=,
// withKey=, partitioner=, otherPartitioner=}]) and leftJoin: the foreign-key joins. fkFn is function(v, r) (Java's Function)
// or, with withKey = true, function(k, v, r) (KIP-1104's BiFunction); the joiner is chosen
// by arity as for the other joins.
func (rt *Runtime) tJoinForeignKey(L *lua.LState, t, other *pipeline.KTable, kind pipeline.TableJoinKind) int {
	if kind == pipeline.OuterTableJoin {
		L.RaiseError("outerJoin has no foreign-key form (Kafka Streams offers join and leftJoin only)")
	}
	fk := L.CheckFunction(3)
	joiner := L.CheckFunction(4)
	o := options(L, 5, kind.String(), fkJoinOpts)
	extract := pipeline.ForeignKeyExtractor(rt.valueMapper(fk, optBool(L, o, "withKey")))
	tj := pipeline.TableJoined{Name: optString(L, o, "name")}
	if fn := optFunction(L, o, "partitioner"); fn != nil {
		tj.Partitioner = rt.partitioner(fn)
	}
	if fn := optFunction(L, o, "otherPartitioner"); fn != nil {
		tj.OtherPartitioner = rt.partitioner(fn)
	}
	out, err := t.JoinForeignKey(other, extract, rt.valueJoiner(joiner), kind == pipeline.LeftTableJoin, tj, rt.materializedOpt(L, o))
	return rt.pushTable(L, out, err)
}
