package org.apache.kafka.streams.state.internals;

import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.streams.state.ValueTimestampHeaders;

/**
 * Reads the stored value layout of headers-aware stores (KIP-1271) with Kafka's own
 * deserializer, which is package-private: the conformance runner compares stores by their
 * values, timestamps and headers, not by Kafka's byte layout.
 */
public final class ConformanceAccess {
    private static final ValueTimestampHeadersDeserializer<byte[]> HEADERS =
        new ValueTimestampHeadersDeserializer<>(new ByteArrayDeserializer());

    private ConformanceAccess() {}

    public static ValueTimestampHeaders<byte[]> valueTimestampHeaders(byte[] raw) {
        return HEADERS.deserialize("", raw);
    }
}
