package stoatflow.conformance;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeSet;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.stream.Stream;

import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.TestInputTopic;
import org.apache.kafka.streams.TestOutputTopic;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.TopologyTestDriver;
import org.apache.kafka.streams.state.BuiltInDslStoreSuppliers;
import org.apache.kafka.streams.test.TestRecord;

/**
 * Runs every case of an input file through TopologyTestDriver and writes what came out:
 * {@code java stoatflow.conformance.Main IN OUT [threads]}. One JVM runs every case and
 * seed (starting one costs a second); runs are independent, so they are spread over
 * threads and written in input order.
 */
public final class Main {
    /** Internal topics (repartition, changelog) start with it; the Go side uses the same id. */
    static final String APPLICATION_ID = "conformance";

    private Main() {}

    public static void main(String[] args) throws Exception {
        if (args.length < 2) {
            System.err.println("usage: Main IN OUT [threads]");
            System.exit(2);
        }
        int threads = args.length > 2 ? Integer.parseInt(args[2]) : 1;
        List<Run> runs = read(Path.of(args[0]));
        Path stateRoot = Files.createTempDirectory("stoatflow-conformance-");
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        List<Future<String>> results = new ArrayList<>();
        for (int i = 0; i < runs.size(); i++) {
            Run run = runs.get(i);
            Path dir = stateRoot.resolve(Integer.toString(i));
            results.add(pool.submit(() -> run(run, dir)));
        }
        try (PrintWriter out = new PrintWriter(Files.newBufferedWriter(Path.of(args[1]), StandardCharsets.UTF_8))) {
            for (Future<String> f : results) {
                out.print(f.get());
            }
        } finally {
            pool.shutdown();
            deleteTree(stateRoot);
        }
    }

    static List<Run> read(Path in) throws IOException {
        List<Run> runs = new ArrayList<>();
        Run cur = null;
        try (BufferedReader r = Files.newBufferedReader(in, StandardCharsets.UTF_8)) {
            for (String line; (line = r.readLine()) != null; ) {
                String[] f = line.split(" ");
                switch (f[0]) {
                    case "case" -> cur = new Run(f[1], Long.parseLong(f[2]));
                    case "in" -> {
                        Run.Step s = new Run.Step();
                        s.topic = f[1];
                        s.partition = Integer.parseInt(f[2]);
                        s.timestamp = Long.parseLong(f[3]);
                        s.key = Wire.bytes(f[4]);
                        s.value = Wire.bytes(f[5]);
                        s.headers = Wire.headers(f[6]);
                        cur.steps.add(s);
                    }
                    case "wall" -> {
                        Run.Step s = new Run.Step();
                        s.wallMs = Long.parseLong(f[1]);
                        cur.steps.add(s);
                    }
                    case "prefix" -> cur.topicPrefix = f[1];
                    case "probekey" -> cur.probeKeys.add(Wire.bytes(f[1]));
                    case "probetime" -> cur.probeTimes.add(Long.parseLong(f[1]));
                    case "end" -> runs.add(cur);
                    default -> throw new IOException("bad input line: " + line);
                }
            }
        }
        return runs;
    }

    static Properties props(Path stateDir) {
        Properties p = new Properties();
        p.put(StreamsConfig.APPLICATION_ID_CONFIG, APPLICATION_ID);
        p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, "unused:9092");
        p.put(StreamsConfig.STATE_DIR_CONFIG, stateDir.toString());
        // StoatFlow's defaults (DESIGN §4): Kafka Streams has none.
        p.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        p.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        // stoatflow test runs without the record cache; TopologyTestDriver commits after
        // every record anyway.
        p.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0);
        // In-memory DSL stores start in microseconds where RocksDB takes milliseconds;
        // versioned stores are RocksDB whatever this says.
        p.put(StreamsConfig.DSL_STORE_SUPPLIERS_CLASS_CONFIG, BuiltInDslStoreSuppliers.InMemoryDslStoreSuppliers.class);
        return p;
    }

    /**
     * Makes a case keep its DSL stores in RocksDB, Kafka Streams' default, instead of the
     * runner's in-memory stores, where the two behave differently and StoatFlow follows
     * the default: Kafka's in-memory session store expires a session exactly when emit on
     * window close would emit it, so it emits none; its in-memory window store advances its
     * retention on the null-value puts of a stream-stream join's window, where RocksDB
     * ignores them, so it misses partners.
     */
    static void rocksDB(Properties p) {
        p.put(StreamsConfig.DSL_STORE_SUPPLIERS_CLASS_CONFIG, BuiltInDslStoreSuppliers.RocksDBDslStoreSuppliers.class);
    }

    static String run(Run run, Path stateDir) {
        StringWriter sw = new StringWriter();
        PrintWriter out = new PrintWriter(sw);
        out.println("case " + run.name + " " + run.seed);
        Case c = Cases.ALL.get(run.name);
        if (c == null) {
            out.println("fatal " + Wire.text("no Java case named " + run.name));
            out.println("end");
            out.flush();
            return sw.toString();
        }
        Properties p = props(stateDir);
        p.put(Case.TOPIC_PREFIX, run.topicPrefix);
        Topology topology;
        try {
            topology = c.build(p);
            p.remove(Case.TOPIC_PREFIX);
        } catch (RuntimeException e) {
            out.println("fatal " + Wire.text("build: " + e));
            out.println("end");
            out.flush();
            return sw.toString();
        }
        out.println("describe " + Wire.text(topology.describe().toString()));
        try (TopologyTestDriver d = new TopologyTestDriver(topology, p, Instant.ofEpochMilli(0))) {
            Map<String, TestInputTopic<byte[], byte[]>> inputs = new HashMap<>();
            Map<String, TestOutputTopic<byte[], byte[]>> outputs = new HashMap<>();
            for (int i = 0; i < run.steps.size(); i++) {
                Run.Step s = run.steps.get(i);
                try {
                    if (s.topic == null) {
                        d.advanceWallClockTime(Duration.ofMillis(s.wallMs));
                    } else {
                        inputs.computeIfAbsent(s.topic, t -> d.createInputTopic(t, new ByteArraySerializer(), new ByteArraySerializer()))
                            .pipeInput(new TestRecord<>(s.key, s.value, s.headers, s.timestamp));
                    }
                } catch (RuntimeException e) {
                    drain(d, outputs, i, out);
                    out.println("error " + i + " " + Wire.text(e + (e.getCause() != null ? " caused by " + e.getCause() : "")));
                    break;
                }
                drain(d, outputs, i, out);
            }
            Dump.stores(d.getAllStateStores(), run, out);
        } catch (RuntimeException e) {
            out.println("fatal " + Wire.text(e.toString()));
        }
        out.println("end");
        out.flush();
        return sw.toString();
    }

    /**
     * Writes what step i produced, topic by topic in name order: the output topics ("out"),
     * and the repartition and foreign-key join topics ("internal"), whose bytes StoatFlow's
     * agents write in a streams group. Changelogs are left out: the stores are compared.
     */
    private static void drain(TopologyTestDriver d, Map<String, TestOutputTopic<byte[], byte[]>> outputs, int step, PrintWriter out) {
        boolean first = true;
        for (String topic : new TreeSet<>(d.producedTopicNames())) {
            String kind = "out";
            if (topic.startsWith(APPLICATION_ID + "-")) {
                if (!topic.endsWith("-repartition") && !topic.endsWith("-topic")) {
                    continue;
                }
                kind = "internal";
            }
            TestOutputTopic<byte[], byte[]> t = outputs.computeIfAbsent(topic,
                n -> d.createOutputTopic(n, new ByteArrayDeserializer(), new ByteArrayDeserializer()));
            for (TestRecord<byte[], byte[]> r : t.readRecordsToList()) {
                if (first) {
                    out.println("step " + step);
                    first = false;
                }
                out.println(kind + " " + topic + " " + Wire.bytes(r.key()) + " " + Wire.bytes(r.value()) + " "
                    + r.timestamp() + " " + Wire.headers(r.headers()));
            }
        }
    }

    private static void deleteTree(Path root) throws IOException {
        try (Stream<Path> s = Files.walk(root)) {
            s.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        }
    }
}
