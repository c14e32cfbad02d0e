package dev.fencing.kafka.internal;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;

import java.util.Arrays;
import java.util.Iterator;
import java.util.List;
import java.util.function.Consumer;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.Headers;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.junit.jupiter.api.Test;

class CopyOnWriteHeadersTest {
    private static RecordHeaders fetched() {
        RecordHeaders headers = new RecordHeaders();
        headers.add("fencing-token", new byte[] {0, 0, 0, 0, 0, 0, 0, 5});
        headers.add("content-type", "text/plain".getBytes(UTF_8));
        return headers;
    }

    private static List<String> keys(Headers headers) {
        return Arrays.stream(headers.toArray()).map(Header::key).toList();
    }

    @Test
    void readsSeeTheFetchedHeadersWithoutCopyingThem() {
        RecordHeaders fetched = fetched();
        Headers headers = new CopyOnWriteHeaders(fetched);

        assertThat(new String(headers.lastHeader("content-type").value(), UTF_8))
                .isEqualTo("text/plain");
        assertThat(keys(headers)).containsExactly("fencing-token", "content-type");
        assertThat(headers.lastHeader("absent")).isNull();
    }

    @Test
    void everyWayOfChangingTheHeadersChangesACopyAndLeavesTheFetchedOnesAsFetched() {
        List<Consumer<Headers>> changes = List.of(
                headers -> headers.add("forwarded-to", "billing".getBytes(UTF_8)),
                headers -> headers.add(new RecordHeader("forwarded-to", "billing".getBytes(UTF_8))),
                headers -> headers.remove("fencing-token"),
                headers -> {
                    Iterator<Header> all = headers.iterator();
                    all.next();
                    all.remove();
                });
        for (int i = 0; i < changes.size(); i++) {
            RecordHeaders fetched = fetched();
            Headers headers = new CopyOnWriteHeaders(fetched);

            changes.get(i).accept(headers);

            assertThat(keys(fetched))
                    .as("the fetched headers after change %s", i)
                    .containsExactly("fencing-token", "content-type");
            assertThat(keys(headers))
                    .as("the handler's headers after change %s", i)
                    .isNotEqualTo(List.of("fencing-token", "content-type"));
        }
    }

    @Test
    void aChangeIsSeenByTheReadsThatFollowIt() {
        Headers headers = new CopyOnWriteHeaders(fetched());

        headers.remove("fencing-token").add("fencing-token", new byte[] {0, 0, 0, 0, 0, 0, 0, 9});

        assertThat(headers.lastHeader("fencing-token").value()).containsExactly(0, 0, 0, 0, 0, 0, 0, 9);
        assertThat(keys(headers)).containsExactly("content-type", "fencing-token");
    }
}
