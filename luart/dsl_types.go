package luart

// The types scripts and tests see, with the LuaLS signature of every method and function:
// what luals.go turns into the editor definitions (scripts/types/). The names are the
// ones the DSL's method tables are built with (typeMetatable, classTable); a test checks
// that every table the runtime builds has exactly these methods.

// dslType is one type: an object type whose methods take self, or a table of functions
// (the stoat and stoat.test modules, the window classes).
type dslType struct {
	module string // "stoat" or "stoat.test"
	name   string // as the runtime names it in errors: "KStream", "stoat.TimeWindows"
	class  string // LuaLS class
	object bool   // methods are called with ':'
	fields []dslField
}

// dslField is a method or function with its LuaLS signatures (more than one for
// overloads), each "(params): results" without self; or, for a value, its type.
type dslField struct {
	name  string
	sigs  []string
	value string // a field that is not a function: its LuaLS type
}

func fn(name string, sigs ...string) dslField { return dslField{name: name, sigs: sigs} }

// dslAliases are the LuaLS aliases the signatures use.
var dslAliases = [][2]string{
	{"stoat.Duration", "integer|string"},
	{"stoat.Serde", "stoat.SerdeName|stoat.LuaSerde|stoat.SchemaSerde|stoat.WindowedSerde"},
	{"stoat.StoreType", `"keyValue"|"timestampedKeyValue"|"window"|"timestampedWindow"|"session"|"versionedKeyValue"`},
	{"stoat.HeadersIn", "table<string, string|stoat.Null>|{key: string, value: string|stoat.Null}[]"},
	{"stoat.Predicate", "fun(key: any, value: any, r: stoat.RecordContext): boolean"},
	{"stoat.ValueMapper", "fun(value: any, r: stoat.RecordContext): any"},
	{"stoat.KeyValueMapper", "fun(key: any, value: any, r: stoat.RecordContext): any, any"},
	{"stoat.ForeachAction", "fun(key: any, value: any, r: stoat.RecordContext)"},
	{"stoat.Joiner", "fun(value: any, otherValue: any, r: stoat.RecordContext): any"},
	{"stoat.Initializer", "fun(): any"},
	{"stoat.Aggregator", "fun(key: any, value: any, aggregate: any, r: stoat.RecordContext): any"},
	{"stoat.Reducer", "fun(aggregate: any, value: any, r: stoat.RecordContext): any"},
	{"stoat.Merger", "fun(key: any, left: any, right: any): any"},
	{"stoat.Partitioner", "fun(topic: string, key: any, value: any, headers: stoat.Headers, numPartitions: integer): integer|integer[]|nil"},
	{"stoat.TopicExtractor", "fun(key: any, value: any, r: stoat.RecordContext): string"},
	{"stoat.TimestampExtractor", "fun(key: any, value: any, r: stoat.RecordContext): integer"},
	{"stoat.Iterator", "fun(): any, any, integer?"},
	{"stoat.Windowed", "{key: any, window: table<string, integer>}"},
	{"stoat.StateStore", "stoat.KeyValueStore|stoat.WindowStore|stoat.SessionStore|stoat.VersionedKeyValueStore"},
}

const (
	kstream = "stoat.KStream"
	ktable  = "stoat.KTable"
)

var dslTypes = []dslType{
	{module: "stoat", name: "stoat", class: "stoat", fields: []dslField{
		fn("builder", "(): stoat.StreamsBuilder"),
		fn("serde", "(spec: stoat.SerdeSpec): stoat.LuaSerde"),
		fn("avro", "(spec: stoat.SchemaSerdeSpec): stoat.SchemaSerde"),
		fn("protobuf", "(spec: stoat.ProtobufSerdeSpec): stoat.SchemaSerde"),
		fn("jsonSchema", "(spec: stoat.SchemaSerdeSpec): stoat.SchemaSerde"),
		fn("array", "(list?: any[]): any[]"),
		{name: "null", value: "stoat.Null"},
		{name: "TimeWindows", value: "stoat.TimeWindowsClass"},
		{name: "SessionWindows", value: "stoat.SessionWindowsClass"},
		{name: "SlidingWindows", value: "stoat.SlidingWindowsClass"},
		{name: "JoinWindows", value: "stoat.JoinWindowsClass"},
		{name: "EmitStrategy", value: "stoat.EmitStrategyClass"},
		{name: "Suppressed", value: "stoat.SuppressedClass"},
		{name: "WindowedSerdes", value: "stoat.WindowedSerdesClass"},
		{name: "AutoOffsetReset", value: "stoat.AutoOffsetResetClass"},
	}},
	{module: "stoat", name: "stoat.WindowedSerdes", class: "stoat.WindowedSerdesClass", fields: []dslField{
		fn("timeWindowedSerdeFrom", "(inner: stoat.Serde, windowSize: stoat.Duration): stoat.WindowedSerde"),
		fn("sessionWindowedSerdeFrom", "(inner: stoat.Serde): stoat.WindowedSerde"),
	}},
	{module: "stoat", name: "stoat.AutoOffsetReset", class: "stoat.AutoOffsetResetClass", fields: []dslField{
		fn("earliest", "(): stoat.AutoOffsetReset"),
		fn("latest", "(): stoat.AutoOffsetReset"),
		fn("none", "(): stoat.AutoOffsetReset"),
		fn("byDuration", "(d: stoat.Duration): stoat.AutoOffsetReset"),
	}},
	{module: "stoat", name: "stoat.TimeWindows", class: "stoat.TimeWindowsClass", fields: []dslField{
		fn("ofSizeWithNoGrace", "(size: stoat.Duration): stoat.TimeWindows"),
		fn("ofSizeAndGrace", "(size: stoat.Duration, grace: stoat.Duration): stoat.TimeWindows"),
	}},
	{module: "stoat", name: "stoat.SessionWindows", class: "stoat.SessionWindowsClass", fields: []dslField{
		fn("ofInactivityGapWithNoGrace", "(gap: stoat.Duration): stoat.SessionWindows"),
		fn("ofInactivityGapAndGrace", "(gap: stoat.Duration, grace: stoat.Duration): stoat.SessionWindows"),
	}},
	{module: "stoat", name: "stoat.SlidingWindows", class: "stoat.SlidingWindowsClass", fields: []dslField{
		fn("ofTimeDifferenceWithNoGrace", "(d: stoat.Duration): stoat.SlidingWindows"),
		fn("ofTimeDifferenceAndGrace", "(d: stoat.Duration, grace: stoat.Duration): stoat.SlidingWindows"),
	}},
	{module: "stoat", name: "stoat.JoinWindows", class: "stoat.JoinWindowsClass", fields: []dslField{
		fn("of", "(d: stoat.Duration): stoat.JoinWindows"),
		fn("ofTimeDifferenceWithNoGrace", "(d: stoat.Duration): stoat.JoinWindows"),
		fn("ofTimeDifferenceAndGrace", "(d: stoat.Duration, grace: stoat.Duration): stoat.JoinWindows"),
	}},
	{module: "stoat", name: "stoat.EmitStrategy", class: "stoat.EmitStrategyClass", fields: []dslField{
		fn("onWindowClose", "(): stoat.EmitStrategy"),
		fn("onWindowUpdate", "(): stoat.EmitStrategy"),
	}},
	{module: "stoat", name: "stoat.Suppressed", class: "stoat.SuppressedClass", fields: []dslField{
		fn("untilWindowCloses", "(buffer: stoat.BufferConfig): stoat.Suppressed"),
		fn("untilTimeLimit", "(limit: stoat.Duration, buffer: stoat.BufferConfig): stoat.Suppressed"),
		{name: "BufferConfig", value: "stoat.BufferConfigClass"},
	}},
	{module: "stoat", name: "stoat.Suppressed.BufferConfig", class: "stoat.BufferConfigClass", fields: []dslField{
		fn("maxRecords", "(n: integer): stoat.BufferConfig"),
		fn("maxBytes", "(n: integer): stoat.BufferConfig"),
		fn("unbounded", "(): stoat.BufferConfig"),
	}},
	{module: "stoat", name: "StreamsBuilder", class: "stoat.StreamsBuilder", object: true, fields: []dslField{
		fn("stream", "(topics: string|string[], opts?: stoat.Consumed): stoat.KStream",
			"(pattern: {pattern: string}, opts?: stoat.Consumed): stoat.KStream"),
		fn("table", "(topic: string, opts?: stoat.TableConsumed): stoat.KTable"),
		fn("globalTable", "(topic: string, opts?: stoat.TableConsumed): stoat.GlobalKTable"),
		fn("addStateStore", "(spec: stoat.StoreSpec)"),
		fn("addGlobalStore", "(spec: stoat.StoreSpec, topic: string, opts: stoat.GlobalStoreConsumed?, supplier: stoat.Processor|fun(): stoat.Processor)"),
	}},
	{module: "stoat", name: "KStream", class: kstream, object: true, fields: []dslField{
		fn("filter", "(predicate: stoat.Predicate, opts?: stoat.Named): stoat.KStream"),
		fn("filterNot", "(predicate: stoat.Predicate, opts?: stoat.Named): stoat.KStream"),
		fn("selectKey", "(mapper: fun(key: any, value: any, r: stoat.RecordContext): any, opts?: stoat.Named): stoat.KStream"),
		fn("map", "(mapper: stoat.KeyValueMapper, opts?: stoat.Named): stoat.KStream"),
		fn("mapValues", "(mapper: stoat.ValueMapper, opts?: stoat.NamedWithKey): stoat.KStream",
			"(mapper: fun(key: any, value: any, r: stoat.RecordContext): any, opts: stoat.NamedWithKey): stoat.KStream"),
		fn("flatMap", "(mapper: fun(key: any, value: any, r: stoat.RecordContext): any[][], opts?: stoat.Named): stoat.KStream"),
		fn("flatMapValues", "(mapper: fun(value: any, r: stoat.RecordContext): any[], opts?: stoat.NamedWithKey): stoat.KStream",
			"(mapper: fun(key: any, value: any, r: stoat.RecordContext): any[], opts: stoat.NamedWithKey): stoat.KStream"),
		fn("peek", "(action: stoat.ForeachAction, opts?: stoat.Named): stoat.KStream"),
		fn("foreach", "(action: stoat.ForeachAction, opts?: stoat.Named)"),
		fn("print", "(opts?: stoat.Printed)"),
		fn("merge", "(other: stoat.KStream, opts?: stoat.Named): stoat.KStream"),
		fn("to", "(topic: string|stoat.TopicExtractor, opts?: stoat.Produced)"),
		fn("repartition", "(opts?: stoat.Repartitioned): stoat.KStream"),
		fn("split", "(opts?: stoat.Named): stoat.BranchedKStream"),
		fn("join",
			"(table: stoat.KTable, joiner: stoat.Joiner, opts?: stoat.Joined): stoat.KStream",
			"(table: stoat.GlobalKTable, keyMapper: fun(key: any, value: any, r: stoat.RecordContext): any, joiner: fun(streamKey: any, tableKey: any, value: any, tableValue: any, r: stoat.RecordContext): any, opts?: stoat.Named): stoat.KStream",
			"(other: stoat.KStream, joiner: stoat.Joiner, windows: stoat.JoinWindows, opts?: stoat.StreamJoined): stoat.KStream"),
		fn("leftJoin",
			"(table: stoat.KTable, joiner: stoat.Joiner, opts?: stoat.Joined): stoat.KStream",
			"(table: stoat.GlobalKTable, keyMapper: fun(key: any, value: any, r: stoat.RecordContext): any, joiner: fun(streamKey: any, tableKey: any, value: any, tableValue: any, r: stoat.RecordContext): any, opts?: stoat.Named): stoat.KStream",
			"(other: stoat.KStream, joiner: stoat.Joiner, windows: stoat.JoinWindows, opts?: stoat.StreamJoined): stoat.KStream"),
		fn("outerJoin", "(other: stoat.KStream, joiner: stoat.Joiner, windows: stoat.JoinWindows, opts?: stoat.StreamJoined): stoat.KStream"),
		fn("groupByKey", "(opts?: stoat.Grouped): stoat.KGroupedStream"),
		fn("groupBy", "(selector: fun(key: any, value: any, r: stoat.RecordContext): any, opts?: stoat.Grouped): stoat.KGroupedStream"),
		fn("toTable", "(opts?: stoat.Stored): stoat.KTable"),
		fn("process", "(supplier: stoat.Processor|fun(): stoat.Processor, opts?: stoat.ProcessOptions): stoat.KStream"),
		fn("processValues", "(supplier: stoat.Processor|fun(): stoat.Processor, opts?: stoat.ProcessOptions): stoat.KStream"),
	}},
	{module: "stoat", name: "BranchedKStream", class: "stoat.BranchedKStream", object: true, fields: []dslField{
		fn("branch", "(predicate: stoat.Predicate, opts?: stoat.Branched): stoat.BranchedKStream"),
		fn("defaultBranch", "(opts?: stoat.Branched): table<string, stoat.KStream>"),
		fn("noDefaultBranch", "(): table<string, stoat.KStream>"),
	}},
	{module: "stoat", name: "KTable", class: ktable, object: true, fields: []dslField{
		fn("toStream", "(opts?: stoat.Named): stoat.KStream", "(keyMapper: fun(key: any, value: any, r: stoat.RecordContext): any, opts?: stoat.Named): stoat.KStream"),
		fn("filter", "(predicate: stoat.Predicate, opts?: stoat.Named): stoat.KTable"),
		fn("filterNot", "(predicate: stoat.Predicate, opts?: stoat.Named): stoat.KTable"),
		fn("mapValues", "(mapper: stoat.ValueMapper, opts?: stoat.NamedWithKey): stoat.KTable",
			"(mapper: fun(key: any, value: any, r: stoat.RecordContext): any, opts: stoat.NamedWithKey): stoat.KTable"),
		fn("groupBy", "(selector: stoat.KeyValueMapper, opts?: stoat.Grouped): stoat.KGroupedTable"),
		fn("queryableStoreName", "(): string?"),
		fn("suppress", "(suppressed: stoat.Suppressed): stoat.KTable"),
		fn("join",
			"(other: stoat.KTable, joiner: stoat.Joiner, opts?: stoat.Stored): stoat.KTable",
			"(other: stoat.KTable, foreignKey: fun(value: any, r: stoat.RecordContext): any, joiner: stoat.Joiner, opts?: stoat.ForeignKeyJoined): stoat.KTable"),
		fn("leftJoin",
			"(other: stoat.KTable, joiner: stoat.Joiner, opts?: stoat.Stored): stoat.KTable",
			"(other: stoat.KTable, foreignKey: fun(value: any, r: stoat.RecordContext): any, joiner: stoat.Joiner, opts?: stoat.ForeignKeyJoined): stoat.KTable"),
		fn("outerJoin", "(other: stoat.KTable, joiner: stoat.Joiner, opts?: stoat.Stored): stoat.KTable"),
	}},
	{module: "stoat", name: "GlobalKTable", class: "stoat.GlobalKTable", object: true, fields: []dslField{
		fn("queryableStoreName", "(): string"),
	}},
	{module: "stoat", name: "KGroupedStream", class: "stoat.KGroupedStream", object: true, fields: []dslField{
		fn("count", "(opts?: stoat.Stored): stoat.KTable"),
		fn("reduce", "(reducer: stoat.Reducer, opts?: stoat.Stored): stoat.KTable"),
		fn("aggregate", "(initializer: stoat.Initializer, aggregator: stoat.Aggregator, opts?: stoat.Stored): stoat.KTable"),
		fn("windowedBy",
			"(windows: stoat.TimeWindows): stoat.TimeWindowedKStream",
			"(windows: stoat.SlidingWindows): stoat.SlidingWindowedKStream",
			"(windows: stoat.SessionWindows): stoat.SessionWindowedKStream"),
		fn("cogroup", "(aggregator: stoat.Aggregator): stoat.CogroupedKStream"),
	}},
	{module: "stoat", name: "KGroupedTable", class: "stoat.KGroupedTable", object: true, fields: []dslField{
		fn("count", "(opts?: stoat.Stored): stoat.KTable"),
		fn("reduce", "(adder: stoat.Reducer, subtractor: stoat.Reducer, opts?: stoat.Stored): stoat.KTable"),
		fn("aggregate", "(initializer: stoat.Initializer, adder: stoat.Aggregator, subtractor: stoat.Aggregator, opts?: stoat.Stored): stoat.KTable"),
	}},
	{module: "stoat", name: "CogroupedKStream", class: "stoat.CogroupedKStream", object: true, fields: []dslField{
		fn("cogroup", "(grouped: stoat.KGroupedStream, aggregator: stoat.Aggregator): stoat.CogroupedKStream"),
		fn("aggregate", "(initializer: stoat.Initializer, opts?: stoat.Stored): stoat.KTable"),
		fn("windowedBy",
			"(windows: stoat.TimeWindows|stoat.SlidingWindows): stoat.TimeWindowedCogroupedKStream",
			"(windows: stoat.SessionWindows): stoat.SessionWindowedCogroupedKStream"),
	}},
	{module: "stoat", name: "TimeWindowedCogroupedKStream", class: "stoat.TimeWindowedCogroupedKStream", object: true, fields: []dslField{
		fn("aggregate", "(initializer: stoat.Initializer, opts?: stoat.Stored): stoat.KTable"),
	}},
	{module: "stoat", name: "SessionWindowedCogroupedKStream", class: "stoat.SessionWindowedCogroupedKStream", object: true, fields: []dslField{
		fn("aggregate", "(initializer: stoat.Initializer, merger: stoat.Merger, opts?: stoat.Stored): stoat.KTable"),
	}},
	{module: "stoat", name: "TimeWindowedKStream", class: "stoat.TimeWindowedKStream", object: true, fields: windowedFields(
		"stoat.TimeWindowedKStream", "(initializer: stoat.Initializer, aggregator: stoat.Aggregator, opts?: stoat.Stored): stoat.KTable")},
	{module: "stoat", name: "SlidingWindowedKStream", class: "stoat.SlidingWindowedKStream", object: true, fields: windowedFields(
		"stoat.SlidingWindowedKStream", "(initializer: stoat.Initializer, aggregator: stoat.Aggregator, opts?: stoat.Stored): stoat.KTable")},
	{module: "stoat", name: "SessionWindowedKStream", class: "stoat.SessionWindowedKStream", object: true, fields: windowedFields(
		"stoat.SessionWindowedKStream", "(initializer: stoat.Initializer, aggregator: stoat.Aggregator, merger: stoat.Merger, opts?: stoat.Stored): stoat.KTable")},
	{module: "stoat", name: "TimeWindows", class: "stoat.TimeWindows", object: true, fields: []dslField{
		fn("advanceBy", "(advance: stoat.Duration): stoat.TimeWindows"),
	}},
	{module: "stoat", name: "SessionWindows", class: "stoat.SessionWindows", object: true},
	{module: "stoat", name: "SlidingWindows", class: "stoat.SlidingWindows", object: true},
	{module: "stoat", name: "JoinWindows", class: "stoat.JoinWindows", object: true, fields: []dslField{
		fn("before", "(d: stoat.Duration): stoat.JoinWindows"),
		fn("after", "(d: stoat.Duration): stoat.JoinWindows"),
		fn("grace", "(grace: stoat.Duration): stoat.JoinWindows"),
	}},
	{module: "stoat", name: "AutoOffsetReset", class: "stoat.AutoOffsetReset", object: true},
	{module: "stoat", name: "WindowedSerde", class: "stoat.WindowedSerde", object: true},
	{module: "stoat", name: "EmitStrategy", class: "stoat.EmitStrategy", object: true, fields: []dslField{
		fn("type", `(): "ON_WINDOW_CLOSE"|"ON_WINDOW_UPDATE"`),
	}},
	{module: "stoat", name: "Suppressed", class: "stoat.Suppressed", object: true, fields: []dslField{
		fn("withName", "(name: string): stoat.Suppressed"),
	}},
	{module: "stoat", name: "BufferConfig", class: "stoat.BufferConfig", object: true, fields: []dslField{
		fn("withMaxRecords", "(n: integer): stoat.BufferConfig"),
		fn("withMaxBytes", "(n: integer): stoat.BufferConfig"),
		fn("withNoBound", "(): stoat.BufferConfig"),
		fn("shutDownWhenFull", "(): stoat.BufferConfig"),
		fn("emitEarlyWhenFull", "(): stoat.BufferConfig"),
		fn("withLoggingDisabled", "(): stoat.BufferConfig"),
		fn("withLoggingEnabled", "(topicConfig?: table<string, string>): stoat.BufferConfig"),
	}},
	{module: "stoat", name: "ProcessorContext", class: "stoat.ProcessorContext", object: true, fields: []dslField{
		fn("forward", "(key: any, value: any, opts?: stoat.Forwarded)", "(value: any, opts?: stoat.Forwarded)"),
		fn("schedule", `(interval: stoat.Duration, type: "stream-time"|"wall-clock", punctuator: fun(timestamp: integer)): stoat.Cancellable`),
		fn("getStateStore", "(name: string): stoat.StateStore"),
		fn("partition", "(): integer"),
		fn("taskId", "(): string"),
		fn("currentStreamTimeMs", "(): integer"),
		fn("currentSystemTimeMs", "(): integer"),
	}},
	{module: "stoat", name: "Cancellable", class: "stoat.Cancellable", object: true, fields: []dslField{
		fn("cancel", "()"),
	}},
	{module: "stoat", name: "KeyValueStore", class: "stoat.KeyValueStore", object: true, fields: []dslField{
		fn("get", "(key: any): any, integer?, stoat.Headers?"),
		fn("put", "(key: any, value: any, timestamp?: integer, headers?: stoat.HeadersIn)"),
		fn("putIfAbsent", "(key: any, value: any, timestamp?: integer): any"),
		fn("delete", "(key: any): any"),
		fn("range", "(from: any, to: any): stoat.Iterator"),
		fn("reverseRange", "(from: any, to: any): stoat.Iterator"),
		fn("all", "(): stoat.Iterator"),
		fn("reverseAll", "(): stoat.Iterator"),
		fn("prefixScan", "(prefix: any): stoat.Iterator"),
		fn("approximateNumEntries", "(): integer"),
		fn("name", "(): string"),
	}},
	{module: "stoat", name: "WindowStore", class: "stoat.WindowStore", object: true, fields: []dslField{
		fn("put", "(key: any, value: any, windowStart: integer, timestamp?: integer, headers?: stoat.HeadersIn)"),
		fn("fetch", "(key: any, time: integer): any, integer?", "(key: any, from: integer, to: integer): stoat.Iterator", "(keyFrom: any, keyTo: any, from: integer, to: integer): stoat.Iterator"),
		fn("backwardFetch", "(key: any, from: integer, to: integer): stoat.Iterator", "(keyFrom: any, keyTo: any, from: integer, to: integer): stoat.Iterator"),
		fn("fetchAll", "(from: integer, to: integer): stoat.Iterator"),
		fn("backwardFetchAll", "(from: integer, to: integer): stoat.Iterator"),
		fn("all", "(): stoat.Iterator"),
		fn("backwardAll", "(): stoat.Iterator"),
		fn("name", "(): string"),
	}},
	{module: "stoat", name: "SessionStore", class: "stoat.SessionStore", object: true, fields: []dslField{
		fn("put", "(session: stoat.Windowed, aggregate: any): boolean"),
		fn("remove", "(session: stoat.Windowed)"),
		fn("fetchSession", "(key: any, sessionStart: integer, sessionEnd: integer): any"),
		fn("findSessions", "(key: any, earliestSessionEnd: integer, latestSessionStart: integer): stoat.Iterator", "(keyFrom: any, keyTo: any, earliestSessionEnd: integer, latestSessionStart: integer): stoat.Iterator"),
		fn("backwardFindSessions", "(key: any, earliestSessionEnd: integer, latestSessionStart: integer): stoat.Iterator", "(keyFrom: any, keyTo: any, earliestSessionEnd: integer, latestSessionStart: integer): stoat.Iterator"),
		fn("fetch", "(key: any): stoat.Iterator", "(keyFrom: any, keyTo: any): stoat.Iterator"),
		fn("backwardFetch", "(key: any): stoat.Iterator", "(keyFrom: any, keyTo: any): stoat.Iterator"),
		fn("name", "(): string"),
	}},
	{module: "stoat", name: "VersionedKeyValueStore", class: "stoat.VersionedKeyValueStore", object: true, fields: []dslField{
		fn("put", "(key: any, value: any, timestamp?: integer): integer?"),
		fn("get", "(key: any, asOfTimestamp?: integer): any, integer?, integer?"),
		fn("delete", "(key: any, timestamp?: integer): any, integer?, integer?"),
		fn("name", "(): string"),
	}},

	{module: "stoat.test", name: "stoat.test", class: "stoat.test", fields: []dslField{
		fn("test", "(name: string, fn: fun())"),
		fn("driver", "(script: string): stoat.test.TopologyTestDriver", "(opts: stoat.test.DriverOptions): stoat.test.TopologyTestDriver"),
		fn("assertEquals", "(actual: any, expected: any, message?: string)"),
		fn("assertTrue", "(v: any, message?: string)"),
		fn("assertFalse", "(v: any, message?: string)"),
		fn("assertNil", "(v: any, message?: string)"),
		fn("assertNotNil", "(v: any, message?: string)"),
		fn("assertError", "(fn: fun(), pattern?: string): string"),
		fn("fail", "(message?: string)"),
	}},
	{module: "stoat.test", name: "TopologyTestDriver", class: "stoat.test.TopologyTestDriver", object: true, fields: []dslField{
		fn("createInputTopic", "(topic: string, opts?: stoat.test.TopicSerdes): stoat.test.TestInputTopic"),
		fn("createOutputTopic", "(topic: string, opts?: stoat.test.TopicSerdes): stoat.test.TestOutputTopic"),
		fn("advanceWallClockTime", "(d: stoat.Duration)"),
		fn("getKeyValueStore", "(name: string): stoat.test.KeyValueStore"),
		fn("getWindowStore", "(name: string): stoat.test.WindowStore"),
		fn("getTimestampedWindowStore", "(name: string): stoat.test.WindowStore"),
		fn("getSessionStore", "(name: string): stoat.test.SessionStore"),
		fn("getVersionedKeyValueStore", "(name: string): stoat.test.VersionedKeyValueStore"),
		fn("close", "()"),
	}},
	{module: "stoat.test", name: "TestInputTopic", class: "stoat.test.TestInputTopic", object: true, fields: []dslField{
		fn("pipeInput", "(key: any, value: any, opts?: stoat.test.PipeOptions)", "(value: any)"),
		fn("pipeKeyValueList", "(pairs: (any[]|{key: any, value: any})[], opts?: stoat.test.PipeListOptions)"),
		fn("pipeValueList", "(values: any[], opts?: stoat.test.PipeListOptions)"),
		fn("advanceTime", "(d: stoat.Duration)"),
	}},
	{module: "stoat.test", name: "TestOutputTopic", class: "stoat.test.TestOutputTopic", object: true, fields: []dslField{
		fn("readValue", "(): any"),
		fn("readKeyValue", "(): {key: any, value: any}"),
		fn("readRecord", "(): stoat.test.Record"),
		fn("readValuesToList", "(): any[]"),
		fn("readKeyValuesToList", "(): {key: any, value: any}[]"),
		fn("readRecordsToList", "(): stoat.test.Record[]"),
		fn("readKeyValuesToMap", "(): table<any, any>"),
		fn("isEmpty", "(): boolean"),
		fn("getQueueSize", "(): integer"),
	}},
	{module: "stoat.test", name: "KeyValueStore", class: "stoat.test.KeyValueStore", object: true, fields: []dslField{
		fn("get", "(key: any): any, integer?"),
		fn("all", "(): {key: any, value: any}[]"),
		fn("approximateNumEntries", "(): integer"),
	}},
	{module: "stoat.test", name: "WindowStore", class: "stoat.test.WindowStore", object: true, fields: []dslField{
		fn("fetch", "(key: any, time: integer): any, integer?", "(key: any, from: integer, to: integer): stoat.test.Entry[]", "(keyFrom: any, keyTo: any, from: integer, to: integer): stoat.test.Entry[]"),
		fn("fetchAll", "(from: integer, to: integer): stoat.test.Entry[]"),
		fn("all", "(): stoat.test.Entry[]"),
	}},
	{module: "stoat.test", name: "SessionStore", class: "stoat.test.SessionStore", object: true, fields: []dslField{
		fn("fetchSession", "(key: any, sessionStart: integer, sessionEnd: integer): any"),
		fn("fetch", "(key: any): stoat.test.Entry[]", "(keyFrom: any, keyTo: any): stoat.test.Entry[]"),
		fn("findSessions", "(key: any, earliestSessionEnd: integer, latestSessionStart: integer): stoat.test.Entry[]"),
	}},
	{module: "stoat.test", name: "VersionedKeyValueStore", class: "stoat.test.VersionedKeyValueStore", object: true, fields: []dslField{
		fn("get", "(key: any, asOfTimestamp?: integer): any, integer?, integer?"),
	}},
}

// dslRecords are the plain tables and opaque values the runtime hands over, as LuaLS
// classes with their fields; parent is what the class extends.
var dslRecords = []struct {
	module, class, parent string
	fields                [][2]string
}{
	{"stoat", "stoat.RecordContext", "", [][2]string{{"timestamp", "integer"}, {"topic", "string"},
		{"partition", "integer"}, {"offset", "integer"}, {"headers", "stoat.Headers"}}},
	{"stoat", "stoat.Processor", "", [][2]string{{"init?", "fun(ctx: stoat.ProcessorContext)"},
		{"process", "fun(ctx: stoat.ProcessorContext, key: any, value: any, r: stoat.RecordContext)"},
		{"close?", "fun(ctx: stoat.ProcessorContext)"}}},
	{"stoat", "stoat.Headers", "table<string, string|stoat.Null>", [][2]string{
		{"all", "fun(self: stoat.Headers): {key: string, value: string|stoat.Null}[]"}}},
	{"stoat", "stoat.Null", "", nil},
	{"stoat", "stoat.LuaSerde", "", nil},
	{"stoat", "stoat.SchemaSerde", "", nil},
	{"stoat.test", "stoat.test.Record", "", [][2]string{{"key", "any"}, {"value", "any"},
		{"timestamp", "integer"}, {"partition", "integer"}, {"headers", "stoat.Headers"}}},
	{"stoat.test", "stoat.test.Entry", "", [][2]string{{"key", "any"}, {"value", "any"},
		{"timestamp", "integer?"}, {"headers", "stoat.Headers?"}}},
}

// windowedFields are the methods of a windowed grouped stream: count, reduce, the
// aggregate signature given, and emitStrategy returning the stream itself.
func windowedFields(class, aggregate string) []dslField {
	return []dslField{
		fn("count", "(opts?: stoat.Stored): stoat.KTable"),
		fn("reduce", "(reducer: stoat.Reducer, opts?: stoat.Stored): stoat.KTable"),
		fn("aggregate", aggregate),
		fn("emitStrategy", "(strategy: stoat.EmitStrategy): "+class),
	}
}
