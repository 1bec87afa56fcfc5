package stoatflow.conformance;

import static stoatflow.conformance.Stateless.n;

import java.time.Duration;
import java.util.Map;

import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.KGroupedStream;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.TimeWindows;
import org.apache.kafka.streams.state.KeyValueStore;

/** Grouping and aggregations of streams and tables, cogroups, toTable. */
final class Aggregations {
    private Aggregations() {}

    static void register(Map<String, Case> cases) {
        cases.put("reduce_concat", p -> {
            StreamsBuilder b = new StreamsBuilder();
            b.<String, String>stream("in")
                .groupByKey()
                .reduce((a, v) -> a + "," + v, Materialized.as("reduced"))
                .toStream()
                .to("out");
            return b.build();
        });
        cases.put("aggregate_groupby", p -> {
            StreamsBuilder b = new StreamsBuilder();
            b.<String, String>stream("in")
                .groupBy((k, v) -> v == null ? null : v.substring(0, Math.min(1, v.length())), Grouped.as("by-first"))
                .aggregate(() -> 0L, (k, v, agg) -> agg + v.length(),
                    Materialized.<String, Long, KeyValueStore<Bytes, byte[]>>as("lens").withValueSerde(Serdes.Long()))
                .toStream()
                .to("out", Produced.with(Serdes.String(), Serdes.Long()));
            return b.build();
        });
        cases.put("table_groupby_count", p -> {
            StreamsBuilder b = new StreamsBuilder();
            b.<String, String>table(Case.topic(p, "in"))
                .groupBy((k, v) -> KeyValue.pair(v, k))
                .count(Materialized.as("by-value"))
                .toStream()
                .to(Case.topic(p, "out"), Produced.with(Serdes.String(), Serdes.Long()));
            return b.build();
        });
        cases.put("table_groupby_null_key", p -> {
            StreamsBuilder b = new StreamsBuilder();
            b.<String, String>table("in")
                .groupBy((k, v) -> KeyValue.pair(v.length() > 3 ? v : null, k))
                .count(Materialized.as("by-value"))
                .toStream()
                .to("out", Produced.with(Serdes.String(), Serdes.Long()));
            return b.build();
        });
        cases.put("table_groupby_reduce", p -> {
            StreamsBuilder b = new StreamsBuilder();
            b.table("nums", Consumed.with(Serdes.String(), Serdes.Long()))
                .groupBy((k, v) -> KeyValue.pair(k.compareTo("c") < 0 ? "low" : "high", v), Grouped.with(Serdes.String(), Serdes.Long()))
                .reduce((a, v) -> a + v, (a, v) -> a - v, Materialized.as("sums"))
                .toStream()
                .to("out", Produced.with(Serdes.String(), Serdes.Long()));
            return b.build();
        });
        cases.put("table_groupby_aggregate", p -> {
            StreamsBuilder b = new StreamsBuilder();
            b.<String, String>table("in", Materialized.as("source"))
                .groupBy((k, v) -> KeyValue.pair(v.length() > 4 ? "long" : "short", k))
                .aggregate(() -> "", (k, v, agg) -> agg + "+" + v, (k, v, agg) -> agg + "-" + v, Materialized.as("agg"))
                .toStream()
                .to("out");
            return b.build();
        });
        cases.put("cogroup", p -> {
            StreamsBuilder b = new StreamsBuilder();
            KGroupedStream<String, String> g1 = b.<String, String>stream("a").groupByKey();
            KGroupedStream<String, String> g2 = b.<String, String>stream("b").groupByKey();
            g1.<String>cogroup((k, v, agg) -> agg + "a" + v)
                .cogroup(g2, (k, v, agg) -> agg + "b" + v)
                .aggregate(() -> "", Materialized.as("cg"))
                .toStream()
                .to("out");
            return b.build();
        });
        cases.put("cogroup_windowed", p -> {
            StreamsBuilder b = new StreamsBuilder();
            KGroupedStream<String, String> g1 = b.<String, String>stream("a").groupByKey();
            KGroupedStream<String, String> g2 = b.<String, String>stream("b").groupBy((k, v) -> v);
            g1.<String>cogroup((k, v, agg) -> agg + "a" + v)
                .cogroup(g2, (k, v, agg) -> agg + "b" + k)
                .windowedBy(TimeWindows.ofSizeAndGrace(Duration.ofMillis(100), Duration.ofMillis(50)))
                .aggregate(() -> "", Materialized.as("cgw"))
                .toStream((wk, v) -> wk.key() + "@" + wk.window().start())
                .to("out");
            return b.build();
        });
        cases.put("to_table", p -> {
            StreamsBuilder b = new StreamsBuilder();
            b.<String, String>stream("in")
                .mapValues(v -> v == null ? null : v.toUpperCase())
                .toTable(Materialized.as("tt"))
                .toStream()
                .to("out");
            return b.build();
        });
        cases.put("table_filter_mapvalues", p -> {
            StreamsBuilder b = new StreamsBuilder();
            b.<String, String>table("in", Materialized.as("src"))
                .filter((k, v) -> v.length() != 3)
                .mapValues((k, v) -> k + "=" + v.toUpperCase())
                .toStream()
                .mapValues(v -> n(v))
                .to("out");
            return b.build();
        });
    }
}
