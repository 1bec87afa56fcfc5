package stoatflow.conformance;

import java.io.PrintWriter;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import org.apache.kafka.common.header.Headers;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.kstream.Windowed;
import org.apache.kafka.streams.processor.StateStore;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.SessionStore;
import org.apache.kafka.streams.state.ValueTimestampHeaders;
import org.apache.kafka.streams.state.VersionedBytesStore;
import org.apache.kafka.streams.state.WindowStore;
import org.apache.kafka.streams.state.internals.ConformanceAccess;
import org.apache.kafka.streams.state.internals.PlainToHeadersWindowStoreAdapter;
import org.apache.kafka.streams.state.internals.WrappedStateStore;

/**
 * Writes every state store's contents in the wire format: the bytes layer under each
 * metered store is read (keys as serialized, values split into value, timestamp and headers
 * as the store kind lays them out), so nothing depends on the case's serdes.
 */
final class Dump {
    private Dump() {}

    static void stores(Map<String, StateStore> stores, Run run, PrintWriter out) {
        for (Map.Entry<String, StateStore> e : new TreeMap<>(stores).entrySet()) {
            store(e.getKey(), e.getValue(), run, out);
        }
    }

    private static final class Entry {
        byte[] key;
        long start;
        long end;
        byte[] value;
        long ts = -1;
        Headers headers;
    }

    @SuppressWarnings("unchecked")
    private static void store(String name, StateStore store, Run run, PrintWriter out) {
        boolean timestamped = WrappedStateStore.isTimestamped(store);
        boolean headers = WrappedStateStore.isHeadersAware(store);
        List<Entry> entries = new ArrayList<>();
        String kind;
        if (WrappedStateStore.isVersioned(store)) {
            kind = "ver";
            VersionedBytesStore inner = versioned(store);
            for (byte[] k : run.probeKeys) {
                probe(entries, k, -1, inner.get(Bytes.wrap(k)));
                for (long t : run.probeTimes) {
                    probe(entries, k, t, inner.get(Bytes.wrap(k), t));
                }
            }
        } else if (store instanceof KeyValueStore) {
            kind = headers ? "hkv" : timestamped ? "tkv" : "kv";
            KeyValueStore<Bytes, byte[]> inner = (KeyValueStore<Bytes, byte[]>) inner(store);
            try (KeyValueIterator<Bytes, byte[]> it = inner.all()) {
                while (it.hasNext()) {
                    KeyValue<Bytes, byte[]> kv = it.next();
                    Entry en = value(kv.value, timestamped, headers);
                    en.key = kv.key.get();
                    entries.add(en);
                }
            }
        } else if (store instanceof WindowStore) {
            kind = headers ? "hwin" : timestamped ? "twin" : "win";
            WindowStore<Bytes, byte[]> inner = (WindowStore<Bytes, byte[]>) inner(store);
            // A plain RocksDB window store (a stream-stream join's) is read through an
            // adapter that hands its values out in the headers-aware layout, with no
            // timestamp and no headers.
            boolean adapted = inner instanceof WrappedStateStore<?, ?, ?> w && w.wrapped() instanceof PlainToHeadersWindowStoreAdapter;
            try (KeyValueIterator<Windowed<Bytes>, byte[]> it = inner.all()) {
                while (it.hasNext()) {
                    KeyValue<Windowed<Bytes>, byte[]> kv = it.next();
                    Entry en = adapted ? value(kv.value, true, true) : value(kv.value, timestamped, headers);
                    if (adapted) {
                        en.ts = -1;
                        en.headers = null;
                    }
                    en.key = kv.key.key().get();
                    en.start = kv.key.window().start();
                    en.end = kv.key.window().end();
                    entries.add(en);
                }
            }
        } else if (store instanceof SessionStore) {
            kind = "ses";
            SessionStore<Bytes, byte[]> inner = (SessionStore<Bytes, byte[]>) inner(store);
            try (KeyValueIterator<Windowed<Bytes>, byte[]> it = inner.findSessions(null, null, 0, Long.MAX_VALUE)) {
                while (it.hasNext()) {
                    KeyValue<Windowed<Bytes>, byte[]> kv = it.next();
                    Entry en = new Entry();
                    en.key = kv.key.key().get();
                    en.start = kv.key.window().start();
                    en.end = kv.key.window().end();
                    en.value = kv.value;
                    entries.add(en);
                }
            }
        } else {
            // Kafka's suppression and stream-table join buffers are no key-value stores: they
            // cannot be listed, only named.
            kind = "opaque";
        }
        out.println("store " + name + " " + kind);
        for (Entry en : entries) {
            out.println("e " + Wire.bytes(en.key) + " " + en.start + " " + en.end + " " + Wire.bytes(en.value)
                + " " + en.ts + " " + Wire.headers(en.headers));
        }
    }

    private static void probe(List<Entry> entries, byte[] key, long asOf, byte[] raw) {
        if (raw == null) {
            return;
        }
        Entry en = value(raw, true, false);
        en.key = key;
        en.start = asOf;
        entries.add(en);
    }

    private static Entry value(byte[] raw, boolean timestamped, boolean headers) {
        Entry en = new Entry();
        if (headers) {
            ValueTimestampHeaders<byte[]> v = ConformanceAccess.valueTimestampHeaders(raw);
            en.value = v.value();
            en.ts = v.timestamp();
            en.headers = v.headers();
        } else if (timestamped) {
            en.ts = ByteBuffer.wrap(raw, 0, 8).getLong();
            en.value = Arrays.copyOfRange(raw, 8, raw.length);
        } else {
            en.value = raw;
        }
        return en;
    }

    /** The store under the metered layer: the first one that speaks bytes. */
    private static StateStore inner(StateStore store) {
        return ((WrappedStateStore<?, ?, ?>) store).wrapped();
    }

    private static VersionedBytesStore versioned(StateStore store) {
        StateStore s = store;
        while (!(s instanceof VersionedBytesStore)) {
            s = ((WrappedStateStore<?, ?, ?>) s).wrapped();
        }
        return (VersionedBytesStore) s;
    }
}
