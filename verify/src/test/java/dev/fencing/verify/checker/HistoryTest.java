package dev.fencing.verify.checker;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class HistoryTest {
    @TempDir
    Path directory;

    private static final String INVOKE =
            "{\"type\":\"invoke\",\"f\":\"append\",\"op\":1000001,\"client\":1,\"resource\":\"r1\",\"token\":7,"
                    + "\"time\":1700000000000,\"path\":\"update\"}";
    private static final String OK =
            "{\"type\":\"ok\",\"f\":\"append\",\"op\":1000001,\"client\":1,\"resource\":\"r1\",\"token\":7,"
                    + "\"time\":1700000000005}";
    private static final String PUBLISH =
            "{\"type\":\"invoke\",\"f\":\"publish\",\"op\":1000001,\"client\":1,\"resource\":\"r1\",\"token\":7,"
                    + "\"time\":1700000000006,\"stamped\":true}";
    private static final String PUBLISHED =
            "{\"type\":\"ok\",\"f\":\"publish\",\"op\":1000001,\"client\":1,\"resource\":\"r1\",\"token\":7,"
                    + "\"time\":1700000000009,\"partition\":2,\"offset\":41}";

    @Test
    void anInvokeAndItsCompletionsMakeOneOperation() throws IOException {
        Files.writeString(directory.resolve("client-1.jsonl"), String.join("\n", INVOKE, OK, PUBLISH, PUBLISHED));

        Operation op = History.read(directory).operation(1000001).orElseThrow();

        assertThat(op.outcome()).isEqualTo(Outcome.OK);
        assertThat(op.token()).isEqualTo(7);
        assertThat(op.path()).isEqualTo("update");
        assertThat(op.completeTime() - op.invokeTime()).isEqualTo(5);
        assertThat(op.publish().acknowledged()).isTrue();
        assertThat(op.publish().partition()).isEqualTo(2);
        assertThat(op.publish().offset()).isEqualTo(41);
    }

    @Test
    void aTruncatedLastLineIsWhatAKilledClientWasWritingAndIsIgnored() throws IOException {
        Files.writeString(directory.resolve("client-1.jsonl"), INVOKE + "\n" + OK.substring(0, OK.length() / 2));

        Operation op = History.read(directory).operation(1000001).orElseThrow();

        assertThat(op.outcome()).isEqualTo(Outcome.INFO);
        assertThat(op.completeTime()).isEqualTo(-1);
        assertThat(op.error()).isEqualTo("no completion recorded");
    }

    @Test
    void anUnreadableLineBeforeTheLastMakesTheHistoryUnusable() throws IOException {
        Files.writeString(directory.resolve("client-1.jsonl"), INVOKE.substring(0, 20) + "\n" + OK + "\n");

        assertThatThrownBy(() -> History.read(directory))
                .isInstanceOf(HistoryException.class)
                .hasMessageContaining("client-1.jsonl line 1");
    }

    @Test
    void aCompletionWithoutItsInvokeIsRefused() throws IOException {
        Files.writeString(directory.resolve("client-1.jsonl"), OK + "\n");

        assertThatThrownBy(() -> History.read(directory))
                .isInstanceOf(HistoryException.class)
                .hasMessageContaining("line 1")
                .hasMessageContaining("never invoked");
    }

    @Test
    void linesOfOneOperationThatDisagreeOnItsTokenAreRefused() throws IOException {
        Files.writeString(
                directory.resolve("client-1.jsonl"), INVOKE + "\n" + OK.replace("\"token\":7", "\"token\":8"));

        assertThatThrownBy(() -> History.read(directory))
                .isInstanceOf(HistoryException.class)
                .hasMessageContaining("token 8")
                .hasMessageContaining("token 7");
    }

    @Test
    void escapedStringsAreRead() {
        HistoryEntry entry = HistoryEntry.parse(OK.replace("}", ",\"error\":\"a \\\"quoted\\\" \\u00e9rror\\n\"}")
                .replace("\"ok\"", "\"info\""));

        assertThat(entry.error()).isEqualTo("a \"quoted\" \u00e9rror\n");
        assertThat(entry.type()).isEqualTo(HistoryEntry.Type.INFO);
    }
}
