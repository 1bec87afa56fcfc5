package stoatflow.conformance;

import java.time.Duration;
import java.util.Map;

import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.kstream.EmitStrategy;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.SessionWindows;
import org.apache.kafka.streams.kstream.SlidingWindows;
import org.apache.kafka.streams.kstream.Suppressed;
import org.apache.kafka.streams.kstream.TimeWindows;
import org.apache.kafka.streams.kstream.WindowedSerdes;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.WindowStore;

/** Windowed aggregations, suppression, emit on window close. */
final class Windows {
    private Windows() {}

    static Duration ms(long ms) {
        return Duration.ofMillis(ms);
    }

    static void register(Map<String, Case> cases) {
        cases.put("tumbling_count", p -> {
            StreamsBuilder b = new StreamsBuilder();
            b.<String, String>stream("in")
                .groupByKey()
                .windowedBy(TimeWindows.ofSizeAndGrace(ms(100), ms(50)))
                .count(Materialized.as("tw"))
                .toStream()
                .to("out", Produced.with(WindowedSerdes.timeWindowedSerdeFrom(String.class, 100), Serdes.Long()));
            return b.build();
        });
        cases.put("hopping_aggregate", p -> {
            StreamsBuilder b = new StreamsBuilder();
            b.<String, String>stream("in")
                .groupByKey()
                .windowedBy(TimeWindows.ofSizeAndGrace(ms(100), ms(30)).advanceBy(ms(40)))
                .aggregate(() -> "", (k, v, agg) -> agg + "," + v, Materialized.as("hop"))
                .toStream((wk, v) -> wk.key() + "@" + wk.window().start() + "-" + wk.window().end())
                .to("out");
            return b.build();
        });
        cases.put("tumbling_nograce_reduce", p -> {
            StreamsBuilder b = new StreamsBuilder();
            b.<String, String>stream("in")
                .groupBy((k, v) -> v)
                .windowedBy(TimeWindows.ofSizeWithNoGrace(ms(60)))
                .reduce((a, v) -> a + v.length())
                .toStream((wk, v) -> wk.key() + "@" + wk.window().start())
                .to("out");
            return b.build();
        });
        cases.put("sliding_count", p -> {
            StreamsBuilder b = new StreamsBuilder();
            b.<String, String>stream("in")
                .groupByKey()
                .windowedBy(SlidingWindows.ofTimeDifferenceAndGrace(ms(50), ms(20)))
                .count(Materialized.as("sliding"))
                .toStream((wk, v) -> wk.key() + "@" + wk.window().start() + "-" + wk.window().end())
                .to("out", Produced.with(Serdes.String(), Serdes.Long()));
            return b.build();
        });
        cases.put("sliding_aggregate", p -> {
            StreamsBuilder b = new StreamsBuilder();
            b.<String, String>stream("in")
                .groupByKey()
                .windowedBy(SlidingWindows.ofTimeDifferenceWithNoGrace(ms(40)))
                .aggregate(() -> "", (k, v, agg) -> agg + v.length(), Materialized.as("slagg"))
                .toStream((wk, v) -> wk.key() + "@" + wk.window().start())
                .to("out");
            return b.build();
        });
        cases.put("session_reduce", p -> {
            StreamsBuilder b = new StreamsBuilder();
            b.<String, String>stream("in")
                .groupByKey()
                .windowedBy(SessionWindows.ofInactivityGapAndGrace(ms(30), ms(20)))
                .reduce((a, v) -> a + "," + v, Materialized.as("sessions"))
                .toStream()
                .to("out", Produced.with(WindowedSerdes.sessionWindowedSerdeFrom(String.class), Serdes.String()));
            return b.build();
        });
        cases.put("session_count", p -> {
            StreamsBuilder b = new StreamsBuilder();
            b.<String, String>stream("in")
                .groupBy((k, v) -> v)
                .windowedBy(SessionWindows.ofInactivityGapWithNoGrace(ms(40)))
                .count()
                .toStream((wk, v) -> wk.key() + "@" + wk.window().start() + "-" + wk.window().end())
                .to("out", Produced.with(Serdes.String(), Serdes.Long()));
            return b.build();
        });
        cases.put("session_aggregate", p -> {
            StreamsBuilder b = new StreamsBuilder();
            b.<String, String>stream("in")
                .groupByKey()
                .windowedBy(SessionWindows.ofInactivityGapAndGrace(ms(25), ms(40)))
                .aggregate(() -> "", (k, v, agg) -> agg + "+" + v, (k, a1, a2) -> a1 + "|" + a2, Materialized.as("sagg"))
                .toStream((wk, v) -> wk.key() + "@" + wk.window().start() + "-" + wk.window().end())
                .to("out");
            return b.build();
        });
        cases.put("suppress_window_close", p -> {
            StreamsBuilder b = new StreamsBuilder();
            b.<String, String>stream(Case.topic(p, "in"))
                .groupByKey()
                .windowedBy(TimeWindows.ofSizeAndGrace(ms(100), ms(20)))
                // Without a key serde here the windowed table has none, and the suppression's
                // buffer falls back on the default String serde for Windowed keys
                // (ClassCastException); StoatFlow windows the default key serde itself.
                .count(Materialized.<String, Long, WindowStore<Bytes, byte[]>>as("counted").withKeySerde(Serdes.String()))
                .suppress(Suppressed.untilWindowCloses(Suppressed.BufferConfig.unbounded()))
                .toStream((wk, v) -> wk.key() + "@" + wk.window().start())
                .to(Case.topic(p, "out"), Produced.with(Serdes.String(), Serdes.Long()));
            return b.build();
        });
        // The same topology on keys that may be null (conformance/cases.go).
        cases.put("suppress_window_close_null_keys", cases.get("suppress_window_close"));
        cases.put("suppress_time_limit", p -> {
            StreamsBuilder b = new StreamsBuilder();
            b.<String, String>stream("in")
                .groupByKey()
                .count(Materialized.as("counted"))
                .suppress(Suppressed.untilTimeLimit(ms(50), Suppressed.BufferConfig.maxRecords(3)).withName("limit"))
                .toStream()
                .to("out", Produced.with(Serdes.String(), Serdes.Long()));
            return b.build();
        });
        cases.put("emit_on_window_close", p -> {
            StreamsBuilder b = new StreamsBuilder();
            b.<String, String>stream("in")
                .groupByKey()
                .windowedBy(TimeWindows.ofSizeAndGrace(ms(100), ms(20)))
                .emitStrategy(EmitStrategy.onWindowClose())
                .count(Materialized.as("final"))
                .toStream((wk, v) -> wk.key() + "@" + wk.window().start())
                .to("out", Produced.with(Serdes.String(), Serdes.Long()));
            return b.build();
        });
        cases.put("sliding_emit_on_close", p -> {
            StreamsBuilder b = new StreamsBuilder();
            b.<String, String>stream("in")
                .groupByKey()
                .windowedBy(SlidingWindows.ofTimeDifferenceAndGrace(ms(50), ms(10)))
                .emitStrategy(EmitStrategy.onWindowClose())
                .count(Materialized.<String, Long, org.apache.kafka.streams.state.WindowStore<Bytes, byte[]>>as("slfinal"))
                .toStream((wk, v) -> wk.key() + "@" + wk.window().start())
                .to("out", Produced.with(Serdes.String(), Serdes.Long()));
            return b.build();
        });
        cases.put("session_emit_on_close", p -> {
            Main.rocksDB(p);
            StreamsBuilder b = new StreamsBuilder();
            b.<String, String>stream("in")
                .groupByKey()
                .windowedBy(SessionWindows.ofInactivityGapAndGrace(ms(30), ms(10)))
                .emitStrategy(EmitStrategy.onWindowClose())
                .count(Materialized.as("sfinal"))
                .toStream((wk, v) -> wk.key() + "@" + wk.window().start() + "-" + wk.window().end())
                .to("out", Produced.with(Serdes.String(), Serdes.Long()));
            return b.build();
        });
        cases.put("filtered_emit_on_close", p -> {
            StreamsBuilder b = new StreamsBuilder();
            b.<String, String>stream(java.util.List.of("a", "b"))
                .filter((k, v) -> v == null || v.length() != 3)
                .groupByKey()
                .windowedBy(TimeWindows.ofSizeAndGrace(ms(100), ms(20)))
                .emitStrategy(EmitStrategy.onWindowClose())
                .count(Materialized.as("filtered"))
                .toStream((wk, v) -> wk.key() + "@" + wk.window().start())
                .to("out", Produced.with(Serdes.String(), Serdes.Long()));
            return b.build();
        });
        cases.put("versioned_count", p -> {
            StreamsBuilder b = new StreamsBuilder();
            b.<String, String>stream("in")
                .groupByKey()
                .count(Materialized.<String, Long>as(
                    org.apache.kafka.streams.state.Stores.persistentVersionedKeyValueStore("vcount", ms(1000))))
                .toStream()
                .to("out", Produced.with(Serdes.String(), Serdes.Long()));
            return b.build();
        });
    }
}
