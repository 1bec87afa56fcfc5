---@meta stoat.test
-- LuaLS definitions of the stoat.test module, for completion and checks in VS Code and Neovim.
-- Generated from the tables that build the DSL (luart/dsl_types.go, luart/dsl_options.go)
-- by `go test ./luart -run TestLuaDefinitions -update`; do not edit.

---@class stoat.test.Record
---@field key any
---@field value any
---@field timestamp integer
---@field partition integer
---@field headers stoat.Headers

---@class stoat.test.Entry
---@field key any
---@field value any
---@field timestamp integer?
---@field headers stoat.Headers?

---@class stoat.test.DriverOptions
---@field scripts? string[]
---@field defaultKeySerde? stoat.SerdeName
---@field defaultValueSerde? stoat.SerdeName
---@field wallClockMs? integer
---@field partitions? table<string, integer>
---@field deserializationExceptionHandler? "LogAndFail"|"LogAndContinue"
---@field processingExceptionHandler? "LogAndFail"|"LogAndContinue"
---@field deadLetterQueueTopic? string

---@class stoat.test.PipeListOptions
---@field timestamp? integer
---@field headers? stoat.HeadersIn
---@field advance? stoat.Duration

---@class stoat.test.PipeOptions
---@field timestamp? integer
---@field headers? stoat.HeadersIn

---@class stoat.test.TopicSerdes
---@field keySerde? stoat.SerdeName
---@field valueSerde? stoat.SerdeName

---@class stoat.test.TopologyTestDriver
---@field createInputTopic fun(self: stoat.test.TopologyTestDriver, topic: string, opts?: stoat.test.TopicSerdes): stoat.test.TestInputTopic
---@field createOutputTopic fun(self: stoat.test.TopologyTestDriver, topic: string, opts?: stoat.test.TopicSerdes): stoat.test.TestOutputTopic
---@field advanceWallClockTime fun(self: stoat.test.TopologyTestDriver, d: stoat.Duration)
---@field getKeyValueStore fun(self: stoat.test.TopologyTestDriver, name: string): stoat.test.KeyValueStore
---@field getWindowStore fun(self: stoat.test.TopologyTestDriver, name: string): stoat.test.WindowStore
---@field getTimestampedWindowStore fun(self: stoat.test.TopologyTestDriver, name: string): stoat.test.WindowStore
---@field getSessionStore fun(self: stoat.test.TopologyTestDriver, name: string): stoat.test.SessionStore
---@field getVersionedKeyValueStore fun(self: stoat.test.TopologyTestDriver, name: string): stoat.test.VersionedKeyValueStore
---@field close fun(self: stoat.test.TopologyTestDriver)

---@class stoat.test.TestInputTopic
---@field pipeInput (fun(self: stoat.test.TestInputTopic, key: any, value: any, opts?: stoat.test.PipeOptions))|(fun(self: stoat.test.TestInputTopic, value: any))
---@field pipeKeyValueList fun(self: stoat.test.TestInputTopic, pairs: (any[]|{key: any, value: any})[], opts?: stoat.test.PipeListOptions)
---@field pipeValueList fun(self: stoat.test.TestInputTopic, values: any[], opts?: stoat.test.PipeListOptions)
---@field advanceTime fun(self: stoat.test.TestInputTopic, d: stoat.Duration)

---@class stoat.test.TestOutputTopic
---@field readValue fun(self: stoat.test.TestOutputTopic): any
---@field readKeyValue fun(self: stoat.test.TestOutputTopic): {key: any, value: any}
---@field readRecord fun(self: stoat.test.TestOutputTopic): stoat.test.Record
---@field readValuesToList fun(self: stoat.test.TestOutputTopic): any[]
---@field readKeyValuesToList fun(self: stoat.test.TestOutputTopic): {key: any, value: any}[]
---@field readRecordsToList fun(self: stoat.test.TestOutputTopic): stoat.test.Record[]
---@field readKeyValuesToMap fun(self: stoat.test.TestOutputTopic): table<any, any>
---@field isEmpty fun(self: stoat.test.TestOutputTopic): boolean
---@field getQueueSize fun(self: stoat.test.TestOutputTopic): integer

---@class stoat.test.KeyValueStore
---@field get fun(self: stoat.test.KeyValueStore, key: any): any, integer?
---@field all fun(self: stoat.test.KeyValueStore): {key: any, value: any}[]
---@field approximateNumEntries fun(self: stoat.test.KeyValueStore): integer

---@class stoat.test.WindowStore
---@field fetch (fun(self: stoat.test.WindowStore, key: any, time: integer): any, integer?)|(fun(self: stoat.test.WindowStore, key: any, from: integer, to: integer): stoat.test.Entry[])|(fun(self: stoat.test.WindowStore, keyFrom: any, keyTo: any, from: integer, to: integer): stoat.test.Entry[])
---@field fetchAll fun(self: stoat.test.WindowStore, from: integer, to: integer): stoat.test.Entry[]
---@field all fun(self: stoat.test.WindowStore): stoat.test.Entry[]

---@class stoat.test.SessionStore
---@field fetchSession fun(self: stoat.test.SessionStore, key: any, sessionStart: integer, sessionEnd: integer): any
---@field fetch (fun(self: stoat.test.SessionStore, key: any): stoat.test.Entry[])|(fun(self: stoat.test.SessionStore, keyFrom: any, keyTo: any): stoat.test.Entry[])
---@field findSessions fun(self: stoat.test.SessionStore, key: any, earliestSessionEnd: integer, latestSessionStart: integer): stoat.test.Entry[]

---@class stoat.test.VersionedKeyValueStore
---@field get fun(self: stoat.test.VersionedKeyValueStore, key: any, asOfTimestamp?: integer): any, integer?, integer?

---@class stoat.test
---@field test fun(name: string, fn: fun())
---@field driver (fun(script: string): stoat.test.TopologyTestDriver)|(fun(opts: stoat.test.DriverOptions): stoat.test.TopologyTestDriver)
---@field assertEquals fun(actual: any, expected: any, message?: string)
---@field assertTrue fun(v: any, message?: string)
---@field assertFalse fun(v: any, message?: string)
---@field assertNil fun(v: any, message?: string)
---@field assertNotNil fun(v: any, message?: string)
---@field assertError fun(fn: fun(), pattern?: string): string
---@field fail fun(message?: string)
local M = {}
return M
