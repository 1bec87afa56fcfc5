package stoatflow.conformance;

import static stoatflow.conformance.Stateless.n;
import static stoatflow.conformance.Windows.ms;

import java.util.Map;

import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.kstream.GlobalKTable;
import org.apache.kafka.streams.kstream.JoinWindows;
import org.apache.kafka.streams.kstream.Joined;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.ValueJoinerWithStreamAndMappedKey;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.Stores;

/** Stream-stream, stream-table, table-table, foreign-key and global table joins. */
final class Joins {
    private Joins() {}

    /** The foreign key of a "fk|payload" value: null when the part before '|' is empty. */
    static String fk(String v) {
        String f = v.substring(0, v.indexOf('|'));
        return f.isEmpty() ? null : f;
    }

    static void register(Map<String, Case> cases) {
        cases.put("stream_stream_join", p -> {
            Main.rocksDB(p);
            StreamsBuilder b = new StreamsBuilder();
            KStream<String, String> l = b.stream("left");
            KStream<String, String> r = b.stream("right");
            l.join(r, (lv, rv) -> lv + "+" + rv, JoinWindows.ofTimeDifferenceAndGrace(ms(50), ms(20))).to("out");
            return b.build();
        });
        cases.put("stream_stream_left_join", p -> {
            Main.rocksDB(p);
            StreamsBuilder b = new StreamsBuilder();
            KStream<String, String> l = b.stream(Case.topic(p, "left"));
            KStream<String, String> r = b.stream(Case.topic(p, "right"));
            l.leftJoin(r, (k, lv, rv) -> n(k) + ":" + lv + "+" + n(rv), JoinWindows.ofTimeDifferenceAndGrace(ms(40), ms(30))).to(Case.topic(p, "out"));
            return b.build();
        });
        cases.put("stream_stream_outer_join", p -> {
            Main.rocksDB(p);
            StreamsBuilder b = new StreamsBuilder();
            KStream<String, String> l = b.stream("left");
            KStream<String, String> r = b.stream("right");
            l.outerJoin(r, (lv, rv) -> n(lv) + "+" + n(rv),
                JoinWindows.ofTimeDifferenceAndGrace(ms(30), ms(20)).before(ms(10))).to("out");
            return b.build();
        });
        cases.put("stream_table_join", p -> {
            StreamsBuilder b = new StreamsBuilder();
            KTable<String, String> t = b.table(Case.topic(p, "users"), Materialized.as("users"));
            b.<String, String>stream(Case.topic(p, "orders")).join(t, (o, u) -> o + "/" + u).to(Case.topic(p, "out"));
            return b.build();
        });
        cases.put("stream_table_left_join", p -> {
            StreamsBuilder b = new StreamsBuilder();
            KTable<String, String> t = b.table("users");
            b.<String, String>stream("orders")
                .selectKey((k, v) -> v == null || v.isEmpty() ? null : v.substring(0, 1))
                .leftJoin(t, (k, o, u) -> n(k) + ":" + o + "/" + n(u), Joined.as("rekeyed"))
                .to("out");
            return b.build();
        });
        cases.put("table_table_join", p -> {
            StreamsBuilder b = new StreamsBuilder();
            KTable<String, String> l = b.table("left");
            KTable<String, String> r = b.table("right");
            l.join(r, (lv, rv) -> lv + "+" + rv).toStream().to("out");
            return b.build();
        });
        cases.put("table_table_left_join", p -> {
            StreamsBuilder b = new StreamsBuilder();
            KTable<String, String> l = b.table("left");
            KTable<String, String> r = b.table("right");
            l.leftJoin(r, (lv, rv) -> lv + "+" + n(rv), Materialized.as("joined")).toStream().to("out");
            return b.build();
        });
        cases.put("table_table_outer_join", p -> {
            StreamsBuilder b = new StreamsBuilder();
            KTable<String, String> l = b.table("left");
            KTable<String, String> r = b.table("right");
            l.outerJoin(r, (lv, rv) -> n(lv) + "+" + n(rv)).toStream().to("out");
            return b.build();
        });
        cases.put("fk_join", p -> {
            StreamsBuilder b = new StreamsBuilder();
            KTable<String, String> orders = b.table(Case.topic(p, "orders"));
            KTable<String, String> customers = b.table(Case.topic(p, "customers"));
            orders.join(customers, Joins::fk, (o, c) -> o + "/" + c).toStream().to(Case.topic(p, "out"));
            return b.build();
        });
        cases.put("fk_left_join", p -> {
            StreamsBuilder b = new StreamsBuilder();
            KTable<String, String> orders = b.table("orders");
            KTable<String, String> customers = b.table("customers");
            orders.leftJoin(customers, (k, v) -> fk(v), (o, c) -> o + "/" + n(c),
                    org.apache.kafka.streams.kstream.TableJoined.as("fkl"), Materialized.as("fk-result"))
                .toStream().to("out");
            return b.build();
        });
        cases.put("global_join", p -> {
            StreamsBuilder b = new StreamsBuilder();
            GlobalKTable<String, String> g = b.globalTable("rates", Materialized.as("rates"));
            ValueJoinerWithStreamAndMappedKey<String, String, String, String, String> j =
                (sk, mk, sv, tv) -> n(sk) + "/" + mk + "/" + sv + "/" + tv;
            b.<String, String>stream("orders").join(g, (k, v) -> v, j).to("out");
            return b.build();
        });
        cases.put("global_left_join", p -> {
            StreamsBuilder b = new StreamsBuilder();
            GlobalKTable<String, String> g = b.globalTable("rates");
            ValueJoinerWithStreamAndMappedKey<String, String, String, String, String> j =
                (sk, mk, sv, tv) -> n(sk) + "/" + n(mk) + "/" + sv + "/" + n(tv);
            b.<String, String>stream("orders").leftJoin(g, (k, v) -> v == null || v.isEmpty() ? null : v.substring(0, 1), j).to("out");
            return b.build();
        });
        cases.put("versioned_stream_table_join", p -> {
            StreamsBuilder b = new StreamsBuilder();
            KTable<String, String> prices = b.table("prices",
                Materialized.<String, String>as(Stores.persistentVersionedKeyValueStore("prices", ms(500))));
            b.<String, String>stream("orders").join(prices, (o, pr) -> o + "@" + pr).to("out");
            return b.build();
        });
        cases.put("versioned_grace_join", p -> {
            StreamsBuilder b = new StreamsBuilder();
            KTable<String, String> prices = b.table("prices",
                Materialized.<String, String>as(Stores.persistentVersionedKeyValueStore("prices", ms(500))));
            b.<String, String>stream("orders")
                .leftJoin(prices, (o, pr) -> o + "@" + n(pr),
                    Joined.<String, String, String>with(Serdes.String(), Serdes.String(), Serdes.String()).withName("graced").withGracePeriod(ms(40)))
                .to("out");
            return b.build();
        });
        cases.put("versioned_table_ops", p -> {
            StreamsBuilder b = new StreamsBuilder();
            b.<String, String>table("prices",
                    Materialized.<String, String>as(Stores.persistentVersionedKeyValueStore("vt", ms(200))))
                .mapValues(v -> v.toUpperCase())
                .toStream()
                .to("out");
            return b.build();
        });
    }
}
