package stoatflow.bench;

import java.io.BufferedReader;
import java.io.FileInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Properties;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.CloseOptions;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.state.KeyValueStore;

/**
 * Kafka Streams' word count as a scenario process of the bench harness (bench/kstreams.go):
 * {@code java -cp CLASSPATH stoatflow.bench.Main streams.properties INPUT OUTPUT}.
 *
 * <p>The topology is bench/scripts/wordcount.lua's, written with the DSL: flatMapValues to the
 * line's lower-cased runs of letters, groupBy the word (a repartition topic), count into the
 * store bench-counts (RocksDB, the default), toStream, to the output with long values. The
 * properties are the harness's, made from the same [streams] config the agent runs with.
 *
 * <p>It speaks the harness's line protocol (bench/internal/childproc): one JSON event a line
 * on stdout ({"running":true} the first time the instance is RUNNING, {"error":"..."} before
 * it exits on a failure), and on stdin "stop" (or the end of stdin) closes it, leaving the
 * group so that the broker holds no member of it for the next run. The harness measures the
 * process from /proc, so it is never asked for stats.
 */
public final class Main {
    private static final Pattern LETTERS = Pattern.compile("[a-z]+");
    private static final PrintStream OUT = System.out;

    private Main() {}

    public static void main(String[] args) throws IOException {
        if (args.length != 3) {
            fail("usage: stoatflow.bench.Main STREAMS_PROPERTIES INPUT_TOPIC OUTPUT_TOPIC");
        }
        Properties props = new Properties();
        try (InputStream in = new FileInputStream(args[0])) {
            props.load(in);
        }
        KafkaStreams streams = new KafkaStreams(wordCount(args[1], args[2]), props);
        streams.setStateListener((now, old) -> {
            if (now == KafkaStreams.State.RUNNING) {
                running();
            } else if (now == KafkaStreams.State.ERROR) {
                fail("Kafka Streams is in state ERROR: " + cause);
            }
        });
        streams.setUncaughtExceptionHandler(e -> {
            cause = "its stream thread failed: " + e;
            return StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
        });
        streams.start();

        BufferedReader cmds = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        for (String line; (line = cmds.readLine()) != null; ) {
            String cmd = line.trim();
            if (cmd.equals("stop")) {
                break;
            }
            if (!cmd.isEmpty()) {
                streams.close(Duration.ofSeconds(30));
                fail("unknown command " + quote(cmd) + " from the harness");
            }
        }
        boolean closed = streams.close(CloseOptions
            .groupMembershipOperation(CloseOptions.GroupMembershipOperation.LEAVE_GROUP)
            .withTimeout(Duration.ofSeconds(30)));
        if (!closed) {
            fail("Kafka Streams did not close within 30s");
        }
        System.exit(0);
    }

    /** The word count of bench/scripts/wordcount.lua; every count update is forwarded. */
    static Topology wordCount(String input, String output) {
        StreamsBuilder b = new StreamsBuilder();
        b.stream(input, Consumed.with(Serdes.String(), Serdes.String()))
            .flatMapValues(Main::words)
            .groupBy((key, word) -> word, Grouped.with(Serdes.String(), Serdes.String()))
            .count(Materialized.<String, Long, KeyValueStore<Bytes, byte[]>>as("bench-counts")
                .withKeySerde(Serdes.String())
                .withValueSerde(Serdes.Long()))
            .toStream()
            .to(output, Produced.with(Serdes.String(), Serdes.Long()));
        return b.build();
    }

    /** The runs of letters of a lower-cased line, as Lua's gmatch("%a+") finds them. */
    static List<String> words(String line) {
        List<String> out = new ArrayList<>();
        Matcher m = LETTERS.matcher(line.toLowerCase(Locale.ROOT));
        while (m.find()) {
            out.add(m.group());
        }
        return out;
    }

    private static boolean reportedRunning;
    /** Why the instance failed, for the error event its state ERROR sends. */
    private static volatile String cause = "no stream thread failed";

    private static synchronized void running() {
        if (!reportedRunning) {
            reportedRunning = true;
            emit("{\"running\":true}");
        }
    }

    private static void fail(String msg) {
        emit("{\"error\":" + quote(msg) + "}");
        System.exit(1);
    }

    private static synchronized void emit(String json) {
        OUT.println(json);
        OUT.flush();
    }

    /** A JSON string of s. */
    static String quote(String s) {
        StringBuilder b = new StringBuilder(s.length() + 2).append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"' -> b.append("\\\"");
                case '\\' -> b.append("\\\\");
                case '\n' -> b.append("\\n");
                case '\r' -> b.append("\\r");
                case '\t' -> b.append("\\t");
                default -> {
                    if (c < 0x20) {
                        b.append(String.format("\\u%04x", (int) c));
                    } else {
                        b.append(c);
                    }
                }
            }
        }
        return b.append('"').toString();
    }
}
