package stoatflow.conformance;

import java.nio.charset.StandardCharsets;
import java.util.Base64;

import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.Headers;
import org.apache.kafka.common.header.internals.RecordHeaders;

/**
 * The line format the Go driver and this runner exchange (conformance/wire.go): fields are
 * separated by single spaces; bytes are "-" for null and "b" + base64 otherwise, so empty and
 * null differ; headers are "-" for none, else name:value pairs joined by commas, the name
 * base64 and the value as bytes.
 */
final class Wire {
    private Wire() {}

    static String bytes(byte[] b) {
        return b == null ? "-" : "b" + Base64.getEncoder().encodeToString(b);
    }

    static byte[] bytes(String s) {
        if (s.equals("-")) {
            return null;
        }
        if (!s.startsWith("b")) {
            throw new IllegalArgumentException("bad bytes field: " + s);
        }
        return Base64.getDecoder().decode(s.substring(1));
    }

    static String text(String s) {
        return Base64.getEncoder().encodeToString(s.getBytes(StandardCharsets.UTF_8));
    }

    static String headers(Headers hs) {
        if (hs == null) {
            return "-";
        }
        StringBuilder sb = new StringBuilder();
        for (Header h : hs) {
            if (sb.length() > 0) {
                sb.append(',');
            }
            sb.append(text(h.key())).append(':').append(bytes(h.value()));
        }
        return sb.length() == 0 ? "-" : sb.toString();
    }

    static Headers headers(String s) {
        RecordHeaders hs = new RecordHeaders();
        if (s.equals("-")) {
            return hs;
        }
        for (String pair : s.split(",")) {
            int colon = pair.indexOf(':');
            String name = new String(Base64.getDecoder().decode(pair.substring(0, colon)), StandardCharsets.UTF_8);
            hs.add(name, bytes(pair.substring(colon + 1)));
        }
        return hs;
    }
}
