---@meta stoat
-- LuaLS definitions of the stoat module, for completion and checks in VS Code and Neovim.
-- Generated from the tables that build the DSL (luart/dsl_types.go, luart/dsl_options.go)
-- by `go test ./luart -run TestLuaDefinitions -update`; do not edit.

---@alias stoat.SerdeName "bytes"|"double"|"integer"|"json"|"long"|"string"|"avro"|"protobuf"|"json-schema"
---@alias stoat.Duration integer|string
---@alias stoat.Serde stoat.SerdeName|stoat.LuaSerde|stoat.SchemaSerde|stoat.WindowedSerde
---@alias stoat.StoreType "keyValue"|"timestampedKeyValue"|"window"|"timestampedWindow"|"session"|"versionedKeyValue"
---@alias stoat.HeadersIn table<string, string|stoat.Null>|{key: string, value: string|stoat.Null}[]
---@alias stoat.Predicate fun(key: any, value: any, r: stoat.RecordContext): boolean
---@alias stoat.ValueMapper fun(value: any, r: stoat.RecordContext): any
---@alias stoat.KeyValueMapper fun(key: any, value: any, r: stoat.RecordContext): any, any
---@alias stoat.ForeachAction fun(key: any, value: any, r: stoat.RecordContext)
---@alias stoat.Joiner fun(value: any, otherValue: any, r: stoat.RecordContext): any
---@alias stoat.Initializer fun(): any
---@alias stoat.Aggregator fun(key: any, value: any, aggregate: any, r: stoat.RecordContext): any
---@alias stoat.Reducer fun(aggregate: any, value: any, r: stoat.RecordContext): any
---@alias stoat.Merger fun(key: any, left: any, right: any): any
---@alias stoat.Partitioner fun(topic: string, key: any, value: any, headers: stoat.Headers, numPartitions: integer): integer|integer[]|nil
---@alias stoat.TopicExtractor fun(key: any, value: any, r: stoat.RecordContext): string
---@alias stoat.TimestampExtractor fun(key: any, value: any, r: stoat.RecordContext): integer
---@alias stoat.Iterator fun(): any, any, integer?
---@alias stoat.Windowed {key: any, window: table<string, integer>}
---@alias stoat.StateStore stoat.KeyValueStore|stoat.WindowStore|stoat.SessionStore|stoat.VersionedKeyValueStore

---@class stoat.RecordContext
---@field timestamp integer
---@field topic string
---@field partition integer
---@field offset integer
---@field headers stoat.Headers

---@class stoat.Processor
---@field init? fun(ctx: stoat.ProcessorContext)
---@field process fun(ctx: stoat.ProcessorContext, key: any, value: any, r: stoat.RecordContext)
---@field close? fun(ctx: stoat.ProcessorContext)

---@class stoat.Headers: table<string, string|stoat.Null>
---@field all fun(self: stoat.Headers): {key: string, value: string|stoat.Null}[]

---@class stoat.Null

---@class stoat.LuaSerde

---@class stoat.SchemaSerde

---@class stoat.Branched
---@field name? string
---@field withFunction? fun(branch: stoat.KStream): stoat.KStream?
---@field withConsumer? fun(branch: stoat.KStream)

---@class stoat.Consumed
---@field keySerde? stoat.Serde
---@field valueSerde? stoat.Serde
---@field timestampExtractor? stoat.TimestampExtractor|"record"|"wallclock"
---@field name? string
---@field offsetReset? stoat.AutoOffsetReset|"earliest"|"latest"|"none"|string

---@class stoat.ForeignKeyJoined
---@field name? string
---@field materialized? string|stoat.Materialized
---@field withKey? boolean
---@field partitioner? stoat.Partitioner
---@field otherPartitioner? stoat.Partitioner

---@class stoat.Forwarded
---@field timestamp? integer
---@field headers? stoat.HeadersIn
---@field to? string

---@class stoat.GlobalStoreConsumed
---@field keySerde? stoat.Serde
---@field valueSerde? stoat.Serde
---@field timestampExtractor? stoat.TimestampExtractor

---@class stoat.Grouped
---@field name? string
---@field keySerde? stoat.Serde
---@field valueSerde? stoat.Serde

---@class stoat.Joined
---@field name? string
---@field keySerde? stoat.Serde
---@field valueSerde? stoat.Serde
---@field otherValueSerde? stoat.Serde
---@field gracePeriod? stoat.Duration

---@class stoat.Materialized
---@field name? string
---@field keySerde? stoat.Serde
---@field valueSerde? stoat.Serde
---@field logging? boolean|table<string, string>
---@field caching? boolean
---@field type? "timestampedKeyValue"|"versionedKeyValue"
---@field historyRetention? stoat.Duration
---@field retention? stoat.Duration

---@class stoat.Named
---@field name? string

---@class stoat.NamedWithKey
---@field name? string
---@field withKey? boolean

---@class stoat.Printed
---@field label? string
---@field name? string

---@class stoat.ProcessOptions
---@field stores? string[]
---@field name? string

---@class stoat.Produced
---@field keySerde? stoat.Serde
---@field valueSerde? stoat.Serde
---@field partitioner? stoat.Partitioner
---@field streamPartitioner? stoat.Partitioner
---@field name? string

---@class stoat.ProtobufSerdeSpec
---@field schema? string
---@field subject? string
---@field version? integer
---@field latest? boolean
---@field autoRegister? boolean
---@field message? string

---@class stoat.Repartitioned
---@field keySerde? stoat.Serde
---@field valueSerde? stoat.Serde
---@field numberOfPartitions? integer
---@field partitioner? stoat.Partitioner
---@field streamPartitioner? stoat.Partitioner
---@field name? string

---@class stoat.SchemaSerdeSpec
---@field schema? string
---@field subject? string
---@field version? integer
---@field latest? boolean
---@field autoRegister? boolean

---@class stoat.SerdeSpec
---@field serialize fun(topic: string, headers: stoat.Headers, value: any): string?
---@field deserialize fun(topic: string, headers: stoat.Headers, bytes: string?): any

---@class stoat.StoreSpec
---@field name string
---@field type? stoat.StoreType
---@field keySerde? stoat.Serde
---@field valueSerde? stoat.Serde
---@field logging? boolean
---@field retention? stoat.Duration
---@field windowSize? stoat.Duration
---@field retainDuplicates? boolean
---@field historyRetention? stoat.Duration
---@field headers? boolean

---@class stoat.Stored
---@field name? string
---@field materialized? string|stoat.Materialized

---@class stoat.StreamJoined
---@field name? string
---@field storeName? string
---@field keySerde? stoat.Serde
---@field valueSerde? stoat.Serde
---@field otherValueSerde? stoat.Serde
---@field thisStoreSupplier? stoat.WindowStoreSupplier
---@field otherStoreSupplier? stoat.WindowStoreSupplier
---@field logging? boolean|table<string, string>

---@class stoat.TableConsumed
---@field keySerde? stoat.Serde
---@field valueSerde? stoat.Serde
---@field materialized? string|stoat.Materialized
---@field timestampExtractor? stoat.TimestampExtractor
---@field name? string
---@field offsetReset? stoat.AutoOffsetReset|"earliest"|"latest"|"none"|string

---@class stoat.WindowStoreSupplier
---@field name string
---@field retention? stoat.Duration
---@field windowSize? stoat.Duration
---@field retainDuplicates? boolean

---@class stoat.WindowedSerdesClass
---@field timeWindowedSerdeFrom fun(inner: stoat.Serde, windowSize: stoat.Duration): stoat.WindowedSerde
---@field sessionWindowedSerdeFrom fun(inner: stoat.Serde): stoat.WindowedSerde

---@class stoat.AutoOffsetResetClass
---@field earliest fun(): stoat.AutoOffsetReset
---@field latest fun(): stoat.AutoOffsetReset
---@field none fun(): stoat.AutoOffsetReset
---@field byDuration fun(d: stoat.Duration): stoat.AutoOffsetReset

---@class stoat.TimeWindowsClass
---@field ofSizeWithNoGrace fun(size: stoat.Duration): stoat.TimeWindows
---@field ofSizeAndGrace fun(size: stoat.Duration, grace: stoat.Duration): stoat.TimeWindows

---@class stoat.SessionWindowsClass
---@field ofInactivityGapWithNoGrace fun(gap: stoat.Duration): stoat.SessionWindows
---@field ofInactivityGapAndGrace fun(gap: stoat.Duration, grace: stoat.Duration): stoat.SessionWindows

---@class stoat.SlidingWindowsClass
---@field ofTimeDifferenceWithNoGrace fun(d: stoat.Duration): stoat.SlidingWindows
---@field ofTimeDifferenceAndGrace fun(d: stoat.Duration, grace: stoat.Duration): stoat.SlidingWindows

---@class stoat.JoinWindowsClass
---@field of fun(d: stoat.Duration): stoat.JoinWindows
---@field ofTimeDifferenceWithNoGrace fun(d: stoat.Duration): stoat.JoinWindows
---@field ofTimeDifferenceAndGrace fun(d: stoat.Duration, grace: stoat.Duration): stoat.JoinWindows

---@class stoat.EmitStrategyClass
---@field onWindowClose fun(): stoat.EmitStrategy
---@field onWindowUpdate fun(): stoat.EmitStrategy

---@class stoat.SuppressedClass
---@field untilWindowCloses fun(buffer: stoat.BufferConfig): stoat.Suppressed
---@field untilTimeLimit fun(limit: stoat.Duration, buffer: stoat.BufferConfig): stoat.Suppressed
---@field BufferConfig stoat.BufferConfigClass

---@class stoat.BufferConfigClass
---@field maxRecords fun(n: integer): stoat.BufferConfig
---@field maxBytes fun(n: integer): stoat.BufferConfig
---@field unbounded fun(): stoat.BufferConfig

---@class stoat.StreamsBuilder
---@field stream (fun(self: stoat.StreamsBuilder, topics: string|string[], opts?: stoat.Consumed): stoat.KStream)|(fun(self: stoat.StreamsBuilder, pattern: {pattern: string}, opts?: stoat.Consumed): stoat.KStream)
---@field table fun(self: stoat.StreamsBuilder, topic: string, opts?: stoat.TableConsumed): stoat.KTable
---@field globalTable fun(self: stoat.StreamsBuilder, topic: string, opts?: stoat.TableConsumed): stoat.GlobalKTable
---@field addStateStore fun(self: stoat.StreamsBuilder, spec: stoat.StoreSpec)
---@field addGlobalStore fun(self: stoat.StreamsBuilder, spec: stoat.StoreSpec, topic: string, opts: stoat.GlobalStoreConsumed?, supplier: stoat.Processor|fun(): stoat.Processor)

---@class stoat.KStream
---@field filter fun(self: stoat.KStream, predicate: stoat.Predicate, opts?: stoat.Named): stoat.KStream
---@field filterNot fun(self: stoat.KStream, predicate: stoat.Predicate, opts?: stoat.Named): stoat.KStream
---@field selectKey fun(self: stoat.KStream, mapper: fun(key: any, value: any, r: stoat.RecordContext): any, opts?: stoat.Named): stoat.KStream
---@field map fun(self: stoat.KStream, mapper: stoat.KeyValueMapper, opts?: stoat.Named): stoat.KStream
---@field mapValues (fun(self: stoat.KStream, mapper: stoat.ValueMapper, opts?: stoat.NamedWithKey): stoat.KStream)|(fun(self: stoat.KStream, mapper: fun(key: any, value: any, r: stoat.RecordContext): any, opts: stoat.NamedWithKey): stoat.KStream)
---@field flatMap fun(self: stoat.KStream, mapper: fun(key: any, value: any, r: stoat.RecordContext): any[][], opts?: stoat.Named): stoat.KStream
---@field flatMapValues (fun(self: stoat.KStream, mapper: fun(value: any, r: stoat.RecordContext): any[], opts?: stoat.NamedWithKey): stoat.KStream)|(fun(self: stoat.KStream, mapper: fun(key: any, value: any, r: stoat.RecordContext): any[], opts: stoat.NamedWithKey): stoat.KStream)
---@field peek fun(self: stoat.KStream, action: stoat.ForeachAction, opts?: stoat.Named): stoat.KStream
---@field foreach fun(self: stoat.KStream, action: stoat.ForeachAction, opts?: stoat.Named)
---@field print fun(self: stoat.KStream, opts?: stoat.Printed)
---@field merge fun(self: stoat.KStream, other: stoat.KStream, opts?: stoat.Named): stoat.KStream
---@field to fun(self: stoat.KStream, topic: string|stoat.TopicExtractor, opts?: stoat.Produced)
---@field repartition fun(self: stoat.KStream, opts?: stoat.Repartitioned): stoat.KStream
---@field split fun(self: stoat.KStream, opts?: stoat.Named): stoat.BranchedKStream
---@field join (fun(self: stoat.KStream, table: stoat.KTable, joiner: stoat.Joiner, opts?: stoat.Joined): stoat.KStream)|(fun(self: stoat.KStream, table: stoat.GlobalKTable, keyMapper: fun(key: any, value: any, r: stoat.RecordContext): any, joiner: fun(streamKey: any, tableKey: any, value: any, tableValue: any, r: stoat.RecordContext): any, opts?: stoat.Named): stoat.KStream)|(fun(self: stoat.KStream, other: stoat.KStream, joiner: stoat.Joiner, windows: stoat.JoinWindows, opts?: stoat.StreamJoined): stoat.KStream)
---@field leftJoin (fun(self: stoat.KStream, table: stoat.KTable, joiner: stoat.Joiner, opts?: stoat.Joined): stoat.KStream)|(fun(self: stoat.KStream, table: stoat.GlobalKTable, keyMapper: fun(key: any, value: any, r: stoat.RecordContext): any, joiner: fun(streamKey: any, tableKey: any, value: any, tableValue: any, r: stoat.RecordContext): any, opts?: stoat.Named): stoat.KStream)|(fun(self: stoat.KStream, other: stoat.KStream, joiner: stoat.Joiner, windows: stoat.JoinWindows, opts?: stoat.StreamJoined): stoat.KStream)
---@field outerJoin fun(self: stoat.KStream, other: stoat.KStream, joiner: stoat.Joiner, windows: stoat.JoinWindows, opts?: stoat.StreamJoined): stoat.KStream
---@field groupByKey fun(self: stoat.KStream, opts?: stoat.Grouped): stoat.KGroupedStream
---@field groupBy fun(self: stoat.KStream, selector: fun(key: any, value: any, r: stoat.RecordContext): any, opts?: stoat.Grouped): stoat.KGroupedStream
---@field toTable fun(self: stoat.KStream, opts?: stoat.Stored): stoat.KTable
---@field process fun(self: stoat.KStream, supplier: stoat.Processor|fun(): stoat.Processor, opts?: stoat.ProcessOptions): stoat.KStream
---@field processValues fun(self: stoat.KStream, supplier: stoat.Processor|fun(): stoat.Processor, opts?: stoat.ProcessOptions): stoat.KStream

---@class stoat.BranchedKStream
---@field branch fun(self: stoat.BranchedKStream, predicate: stoat.Predicate, opts?: stoat.Branched): stoat.BranchedKStream
---@field defaultBranch fun(self: stoat.BranchedKStream, opts?: stoat.Branched): table<string, stoat.KStream>
---@field noDefaultBranch fun(self: stoat.BranchedKStream): table<string, stoat.KStream>

---@class stoat.KTable
---@field toStream (fun(self: stoat.KTable, opts?: stoat.Named): stoat.KStream)|(fun(self: stoat.KTable, keyMapper: fun(key: any, value: any, r: stoat.RecordContext): any, opts?: stoat.Named): stoat.KStream)
---@field filter fun(self: stoat.KTable, predicate: stoat.Predicate, opts?: stoat.Named): stoat.KTable
---@field filterNot fun(self: stoat.KTable, predicate: stoat.Predicate, opts?: stoat.Named): stoat.KTable
---@field mapValues (fun(self: stoat.KTable, mapper: stoat.ValueMapper, opts?: stoat.NamedWithKey): stoat.KTable)|(fun(self: stoat.KTable, mapper: fun(key: any, value: any, r: stoat.RecordContext): any, opts: stoat.NamedWithKey): stoat.KTable)
---@field groupBy fun(self: stoat.KTable, selector: stoat.KeyValueMapper, opts?: stoat.Grouped): stoat.KGroupedTable
---@field queryableStoreName fun(self: stoat.KTable): string?
---@field suppress fun(self: stoat.KTable, suppressed: stoat.Suppressed): stoat.KTable
---@field join (fun(self: stoat.KTable, other: stoat.KTable, joiner: stoat.Joiner, opts?: stoat.Stored): stoat.KTable)|(fun(self: stoat.KTable, other: stoat.KTable, foreignKey: fun(value: any, r: stoat.RecordContext): any, joiner: stoat.Joiner, opts?: stoat.ForeignKeyJoined): stoat.KTable)
---@field leftJoin (fun(self: stoat.KTable, other: stoat.KTable, joiner: stoat.Joiner, opts?: stoat.Stored): stoat.KTable)|(fun(self: stoat.KTable, other: stoat.KTable, foreignKey: fun(value: any, r: stoat.RecordContext): any, joiner: stoat.Joiner, opts?: stoat.ForeignKeyJoined): stoat.KTable)
---@field outerJoin fun(self: stoat.KTable, other: stoat.KTable, joiner: stoat.Joiner, opts?: stoat.Stored): stoat.KTable

---@class stoat.GlobalKTable
---@field queryableStoreName fun(self: stoat.GlobalKTable): string

---@class stoat.KGroupedStream
---@field count fun(self: stoat.KGroupedStream, opts?: stoat.Stored): stoat.KTable
---@field reduce fun(self: stoat.KGroupedStream, reducer: stoat.Reducer, opts?: stoat.Stored): stoat.KTable
---@field aggregate fun(self: stoat.KGroupedStream, initializer: stoat.Initializer, aggregator: stoat.Aggregator, opts?: stoat.Stored): stoat.KTable
---@field windowedBy (fun(self: stoat.KGroupedStream, windows: stoat.TimeWindows): stoat.TimeWindowedKStream)|(fun(self: stoat.KGroupedStream, windows: stoat.SlidingWindows): stoat.SlidingWindowedKStream)|(fun(self: stoat.KGroupedStream, windows: stoat.SessionWindows): stoat.SessionWindowedKStream)
---@field cogroup fun(self: stoat.KGroupedStream, aggregator: stoat.Aggregator): stoat.CogroupedKStream

---@class stoat.KGroupedTable
---@field count fun(self: stoat.KGroupedTable, opts?: stoat.Stored): stoat.KTable
---@field reduce fun(self: stoat.KGroupedTable, adder: stoat.Reducer, subtractor: stoat.Reducer, opts?: stoat.Stored): stoat.KTable
---@field aggregate fun(self: stoat.KGroupedTable, initializer: stoat.Initializer, adder: stoat.Aggregator, subtractor: stoat.Aggregator, opts?: stoat.Stored): stoat.KTable

---@class stoat.CogroupedKStream
---@field cogroup fun(self: stoat.CogroupedKStream, grouped: stoat.KGroupedStream, aggregator: stoat.Aggregator): stoat.CogroupedKStream
---@field aggregate fun(self: stoat.CogroupedKStream, initializer: stoat.Initializer, opts?: stoat.Stored): stoat.KTable
---@field windowedBy (fun(self: stoat.CogroupedKStream, windows: stoat.TimeWindows|stoat.SlidingWindows): stoat.TimeWindowedCogroupedKStream)|(fun(self: stoat.CogroupedKStream, windows: stoat.SessionWindows): stoat.SessionWindowedCogroupedKStream)

---@class stoat.TimeWindowedCogroupedKStream
---@field aggregate fun(self: stoat.TimeWindowedCogroupedKStream, initializer: stoat.Initializer, opts?: stoat.Stored): stoat.KTable

---@class stoat.SessionWindowedCogroupedKStream
---@field aggregate fun(self: stoat.SessionWindowedCogroupedKStream, initializer: stoat.Initializer, merger: stoat.Merger, opts?: stoat.Stored): stoat.KTable

---@class stoat.TimeWindowedKStream
---@field count fun(self: stoat.TimeWindowedKStream, opts?: stoat.Stored): stoat.KTable
---@field reduce fun(self: stoat.TimeWindowedKStream, reducer: stoat.Reducer, opts?: stoat.Stored): stoat.KTable
---@field aggregate fun(self: stoat.TimeWindowedKStream, initializer: stoat.Initializer, aggregator: stoat.Aggregator, opts?: stoat.Stored): stoat.KTable
---@field emitStrategy fun(self: stoat.TimeWindowedKStream, strategy: stoat.EmitStrategy): stoat.TimeWindowedKStream

---@class stoat.SlidingWindowedKStream
---@field count fun(self: stoat.SlidingWindowedKStream, opts?: stoat.Stored): stoat.KTable
---@field reduce fun(self: stoat.SlidingWindowedKStream, reducer: stoat.Reducer, opts?: stoat.Stored): stoat.KTable
---@field aggregate fun(self: stoat.SlidingWindowedKStream, initializer: stoat.Initializer, aggregator: stoat.Aggregator, opts?: stoat.Stored): stoat.KTable
---@field emitStrategy fun(self: stoat.SlidingWindowedKStream, strategy: stoat.EmitStrategy): stoat.SlidingWindowedKStream

---@class stoat.SessionWindowedKStream
---@field count fun(self: stoat.SessionWindowedKStream, opts?: stoat.Stored): stoat.KTable
---@field reduce fun(self: stoat.SessionWindowedKStream, reducer: stoat.Reducer, opts?: stoat.Stored): stoat.KTable
---@field aggregate fun(self: stoat.SessionWindowedKStream, initializer: stoat.Initializer, aggregator: stoat.Aggregator, merger: stoat.Merger, opts?: stoat.Stored): stoat.KTable
---@field emitStrategy fun(self: stoat.SessionWindowedKStream, strategy: stoat.EmitStrategy): stoat.SessionWindowedKStream

---@class stoat.TimeWindows
---@field advanceBy fun(self: stoat.TimeWindows, advance: stoat.Duration): stoat.TimeWindows

---@class stoat.SessionWindows

---@class stoat.SlidingWindows

---@class stoat.JoinWindows
---@field before fun(self: stoat.JoinWindows, d: stoat.Duration): stoat.JoinWindows
---@field after fun(self: stoat.JoinWindows, d: stoat.Duration): stoat.JoinWindows
---@field grace fun(self: stoat.JoinWindows, grace: stoat.Duration): stoat.JoinWindows

---@class stoat.AutoOffsetReset

---@class stoat.WindowedSerde

---@class stoat.EmitStrategy
---@field type fun(self: stoat.EmitStrategy): "ON_WINDOW_CLOSE"|"ON_WINDOW_UPDATE"

---@class stoat.Suppressed
---@field withName fun(self: stoat.Suppressed, name: string): stoat.Suppressed

---@class stoat.BufferConfig
---@field withMaxRecords fun(self: stoat.BufferConfig, n: integer): stoat.BufferConfig
---@field withMaxBytes fun(self: stoat.BufferConfig, n: integer): stoat.BufferConfig
---@field withNoBound fun(self: stoat.BufferConfig): stoat.BufferConfig
---@field shutDownWhenFull fun(self: stoat.BufferConfig): stoat.BufferConfig
---@field emitEarlyWhenFull fun(self: stoat.BufferConfig): stoat.BufferConfig
---@field withLoggingDisabled fun(self: stoat.BufferConfig): stoat.BufferConfig
---@field withLoggingEnabled fun(self: stoat.BufferConfig, topicConfig?: table<string, string>): stoat.BufferConfig

---@class stoat.ProcessorContext
---@field forward (fun(self: stoat.ProcessorContext, key: any, value: any, opts?: stoat.Forwarded))|(fun(self: stoat.ProcessorContext, value: any, opts?: stoat.Forwarded))
---@field schedule fun(self: stoat.ProcessorContext, interval: stoat.Duration, type: "stream-time"|"wall-clock", punctuator: fun(timestamp: integer)): stoat.Cancellable
---@field getStateStore fun(self: stoat.ProcessorContext, name: string): stoat.StateStore
---@field partition fun(self: stoat.ProcessorContext): integer
---@field taskId fun(self: stoat.ProcessorContext): string
---@field currentStreamTimeMs fun(self: stoat.ProcessorContext): integer
---@field currentSystemTimeMs fun(self: stoat.ProcessorContext): integer

---@class stoat.Cancellable
---@field cancel fun(self: stoat.Cancellable)

---@class stoat.KeyValueStore
---@field get fun(self: stoat.KeyValueStore, key: any): any, integer?, stoat.Headers?
---@field put fun(self: stoat.KeyValueStore, key: any, value: any, timestamp?: integer, headers?: stoat.HeadersIn)
---@field putIfAbsent fun(self: stoat.KeyValueStore, key: any, value: any, timestamp?: integer): any
---@field delete fun(self: stoat.KeyValueStore, key: any): any
---@field range fun(self: stoat.KeyValueStore, from: any, to: any): stoat.Iterator
---@field reverseRange fun(self: stoat.KeyValueStore, from: any, to: any): stoat.Iterator
---@field all fun(self: stoat.KeyValueStore): stoat.Iterator
---@field reverseAll fun(self: stoat.KeyValueStore): stoat.Iterator
---@field prefixScan fun(self: stoat.KeyValueStore, prefix: any): stoat.Iterator
---@field approximateNumEntries fun(self: stoat.KeyValueStore): integer
---@field name fun(self: stoat.KeyValueStore): string

---@class stoat.WindowStore
---@field put fun(self: stoat.WindowStore, key: any, value: any, windowStart: integer, timestamp?: integer, headers?: stoat.HeadersIn)
---@field fetch (fun(self: stoat.WindowStore, key: any, time: integer): any, integer?)|(fun(self: stoat.WindowStore, key: any, from: integer, to: integer): stoat.Iterator)|(fun(self: stoat.WindowStore, keyFrom: any, keyTo: any, from: integer, to: integer): stoat.Iterator)
---@field backwardFetch (fun(self: stoat.WindowStore, key: any, from: integer, to: integer): stoat.Iterator)|(fun(self: stoat.WindowStore, keyFrom: any, keyTo: any, from: integer, to: integer): stoat.Iterator)
---@field fetchAll fun(self: stoat.WindowStore, from: integer, to: integer): stoat.Iterator
---@field backwardFetchAll fun(self: stoat.WindowStore, from: integer, to: integer): stoat.Iterator
---@field all fun(self: stoat.WindowStore): stoat.Iterator
---@field backwardAll fun(self: stoat.WindowStore): stoat.Iterator
---@field name fun(self: stoat.WindowStore): string

---@class stoat.SessionStore
---@field put fun(self: stoat.SessionStore, session: stoat.Windowed, aggregate: any): boolean
---@field remove fun(self: stoat.SessionStore, session: stoat.Windowed)
---@field fetchSession fun(self: stoat.SessionStore, key: any, sessionStart: integer, sessionEnd: integer): any
---@field findSessions (fun(self: stoat.SessionStore, key: any, earliestSessionEnd: integer, latestSessionStart: integer): stoat.Iterator)|(fun(self: stoat.SessionStore, keyFrom: any, keyTo: any, earliestSessionEnd: integer, latestSessionStart: integer): stoat.Iterator)
---@field backwardFindSessions (fun(self: stoat.SessionStore, key: any, earliestSessionEnd: integer, latestSessionStart: integer): stoat.Iterator)|(fun(self: stoat.SessionStore, keyFrom: any, keyTo: any, earliestSessionEnd: integer, latestSessionStart: integer): stoat.Iterator)
---@field fetch (fun(self: stoat.SessionStore, key: any): stoat.Iterator)|(fun(self: stoat.SessionStore, keyFrom: any, keyTo: any): stoat.Iterator)
---@field backwardFetch (fun(self: stoat.SessionStore, key: any): stoat.Iterator)|(fun(self: stoat.SessionStore, keyFrom: any, keyTo: any): stoat.Iterator)
---@field name fun(self: stoat.SessionStore): string

---@class stoat.VersionedKeyValueStore
---@field put fun(self: stoat.VersionedKeyValueStore, key: any, value: any, timestamp?: integer): integer?
---@field get fun(self: stoat.VersionedKeyValueStore, key: any, asOfTimestamp?: integer): any, integer?, integer?
---@field delete fun(self: stoat.VersionedKeyValueStore, key: any, timestamp?: integer): any, integer?, integer?
---@field name fun(self: stoat.VersionedKeyValueStore): string

---@class stoat
---@field builder fun(): stoat.StreamsBuilder
---@field serde fun(spec: stoat.SerdeSpec): stoat.LuaSerde
---@field avro fun(spec: stoat.SchemaSerdeSpec): stoat.SchemaSerde
---@field protobuf fun(spec: stoat.ProtobufSerdeSpec): stoat.SchemaSerde
---@field jsonSchema fun(spec: stoat.SchemaSerdeSpec): stoat.SchemaSerde
---@field array fun(list?: any[]): any[]
---@field null stoat.Null
---@field TimeWindows stoat.TimeWindowsClass
---@field SessionWindows stoat.SessionWindowsClass
---@field SlidingWindows stoat.SlidingWindowsClass
---@field JoinWindows stoat.JoinWindowsClass
---@field EmitStrategy stoat.EmitStrategyClass
---@field Suppressed stoat.SuppressedClass
---@field WindowedSerdes stoat.WindowedSerdesClass
---@field AutoOffsetReset stoat.AutoOffsetResetClass
local M = {}
return M
