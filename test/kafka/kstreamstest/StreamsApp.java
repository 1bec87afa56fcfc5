import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.TreeSet;

import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.CloseOptions;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.TaskMetadata;
import org.apache.kafka.streams.ThreadMetadata;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler;
import org.apache.kafka.streams.kstream.GlobalKTable;
import org.apache.kafka.streams.kstream.JoinWindows;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.Repartitioned;
import org.apache.kafka.streams.kstream.SessionWindows;
import org.apache.kafka.streams.kstream.TimeWindows;
import org.apache.kafka.streams.kstream.WindowedSerdes;

/**
 * A Kafka Streams 4.4 application for the real-broker tests of streams groups (package
 * kstreamstest): one of a few topologies, its topics named on the command line, with
 * group.protocol=streams. Each has a Lua twin in the Go tests.
 *
 * <p>Usage: StreamsApp TOPOLOGY name=topic... --prop=value... It prints "STATE s" on every
 * state change, "TASKS active=0_0,1_0 standby=..." whenever its tasks change, "ERROR e" on an
 * uncaught exception, and "CLOSED" last. A line "close" (or the end) on stdin closes it as
 * close() does; "leave" closes it leaving the group (CloseOptions LEAVE_GROUP).
 */
public final class StreamsApp {
    private StreamsApp() {}

    public static void main(String[] args) throws Exception {
        Map<String, String> topics = new HashMap<>();
        Properties props = new Properties();
        props.put(StreamsConfig.GROUP_PROTOCOL_CONFIG, "streams");
        props.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        props.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        for (String a : Arrays.copyOfRange(args, 1, args.length)) {
            int eq = a.indexOf('=');
            if (a.startsWith("--")) {
                props.put(a.substring(2, eq), a.substring(eq + 1));
            } else {
                topics.put(a.substring(0, eq), a.substring(eq + 1));
            }
        }
        Topology topology = build(args[0], topics);
        KafkaStreams streams = new KafkaStreams(topology, props);
        streams.setStateListener((now, before) -> say("STATE " + now));
        streams.setUncaughtExceptionHandler(e -> {
            say("ERROR " + e.toString().replace('\n', ' '));
            return StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
        });
        streams.start();

        Thread watcher = new Thread(() -> {
            String last = "";
            while (!Thread.currentThread().isInterrupted()) {
                try {
                    String now = tasks(streams);
                    if (!now.equals(last)) {
                        say(now);
                        last = now;
                    }
                    Thread.sleep(50);
                } catch (InterruptedException e) {
                    return;
                } catch (RuntimeException e) {
                    // the client is not running yet or any more
                }
            }
        });
        watcher.setDaemon(true);
        watcher.start();

        CloseOptions.GroupMembershipOperation op = CloseOptions.GroupMembershipOperation.DEFAULT;
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        for (String line; (line = in.readLine()) != null; ) {
            if (line.equals("leave")) {
                op = CloseOptions.GroupMembershipOperation.LEAVE_GROUP;
                break;
            }
            if (line.equals("close")) {
                break;
            }
        }
        watcher.interrupt();
        streams.close(CloseOptions.groupMembershipOperation(op).withTimeout(Duration.ofSeconds(30)));
        say("CLOSED");
        System.exit(0);
    }

    private static synchronized void say(String line) {
        System.out.println(line);
        System.out.flush();
    }

    private static String tasks(KafkaStreams streams) {
        TreeSet<String> active = new TreeSet<>();
        TreeSet<String> standby = new TreeSet<>();
        for (ThreadMetadata t : streams.metadataForLocalThreads()) {
            for (TaskMetadata m : t.activeTasks()) {
                active.add(m.taskId().toString());
            }
            for (TaskMetadata m : t.standbyTasks()) {
                standby.add(m.taskId().toString());
            }
        }
        return "TASKS active=" + String.join(",", active) + " standby=" + String.join(",", standby);
    }

    private static String topic(Map<String, String> topics, String name) {
        String t = topics.get(name);
        if (t == null) {
            throw new IllegalArgumentException("no topic given for " + name);
        }
        return t;
    }

    /** The topologies; each has a Lua twin in the Go tests (streamsgroup_topologies_test.go). */
    static Topology build(String name, Map<String, String> t) {
        StreamsBuilder b = new StreamsBuilder();
        switch (name) {
            case "wordcount":
                b.<String, String>stream(topic(t, "in"))
                    .flatMapValues(v -> {
                        List<String> words = new ArrayList<>();
                        for (String w : v.toLowerCase(Locale.ROOT).split("[^a-z]+")) {
                            if (!w.isEmpty()) {
                                words.add(w);
                            }
                        }
                        return words;
                    })
                    .groupBy((k, w) -> w)
                    .count()
                    .toStream()
                    .to(topic(t, "out"), Produced.with(Serdes.String(), Serdes.Long()));
                break;
            case "table_groupby_count":
                b.<String, String>table(topic(t, "in"))
                    .groupBy((k, v) -> KeyValue.pair(v, k))
                    .count(Materialized.as("by-region"))
                    .toStream()
                    .to(topic(t, "out"), Produced.with(Serdes.String(), Serdes.Long()));
                break;
            case "windowed":
                b.<String, String>stream(topic(t, "in"))
                    .groupByKey()
                    .windowedBy(TimeWindows.ofSizeAndGrace(Duration.ofMinutes(1), Duration.ofSeconds(10)))
                    .count(Materialized.as("per-minute"))
                    .toStream()
                    .to(topic(t, "out"), Produced.with(WindowedSerdes.timeWindowedSerdeFrom(String.class, 60000), Serdes.Long()));
                break;
            case "session":
                b.<String, String>stream(topic(t, "in"))
                    .groupByKey()
                    .windowedBy(SessionWindows.ofInactivityGapAndGrace(Duration.ofSeconds(30), Duration.ofSeconds(5)))
                    .count()
                    .toStream()
                    .to(topic(t, "out"), Produced.with(WindowedSerdes.sessionWindowedSerdeFrom(String.class), Serdes.Long()));
                break;
            case "stream_table_join": {
                KTable<String, String> users = b.table(topic(t, "table"), Materialized.as("users"));
                b.<String, String>stream(topic(t, "in")).join(users, (o, u) -> o + "/" + u).to(topic(t, "out"));
                break;
            }
            case "rekey_join": {
                KStream<String, String> l = b.<String, String>stream(topic(t, "in")).selectKey((k, v) -> v);
                KStream<String, String> r = b.<String, String>stream(topic(t, "other"))
                    .repartition(Repartitioned.numberOfPartitions(4));
                l.join(r, (lv, rv) -> lv + "+" + rv, JoinWindows.ofTimeDifferenceAndGrace(Duration.ofSeconds(5), Duration.ofSeconds(1)))
                    .to(topic(t, "out"));
                break;
            }
            case "left_join": {
                KStream<String, String> l = b.stream(topic(t, "in"));
                KStream<String, String> r = b.stream(topic(t, "other"));
                l.leftJoin(r, (lv, rv) -> lv + "+" + rv, JoinWindows.ofTimeDifferenceAndGrace(Duration.ofSeconds(5), Duration.ofSeconds(1)))
                    .to(topic(t, "out"));
                break;
            }
            case "fk_join": {
                KTable<String, String> orders = b.table(topic(t, "in"));
                KTable<String, String> customers = b.table(topic(t, "table"));
                orders.join(customers, v -> v.substring(0, v.indexOf('|')), (o, c) -> o + "/" + c).toStream().to(topic(t, "out"));
                break;
            }
            case "global_table": {
                GlobalKTable<String, String> rates = b.globalTable(topic(t, "table"), Materialized.as("rates"));
                b.<String, String>stream(topic(t, "in")).join(rates, (k, v) -> v, (v, r) -> v + "@" + r).to(topic(t, "out"));
                break;
            }
            default:
                throw new IllegalArgumentException("no topology " + name);
        }
        return b.build();
    }
}
