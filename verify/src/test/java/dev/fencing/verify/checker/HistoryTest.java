package dev.fencing.verify.checker;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.assertj.core.api.InstanceOfAssertFactories;
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

        History history = History.read(directory);
        Operation op = history.operation(1000001).orElseThrow();

        assertThat(op.outcome()).isEqualTo(Outcome.INFO);
        assertThat(op.completeTime()).isEqualTo(-1);
        assertThat(op.error()).isEqualTo("no completion recorded");
        assertThat(history.tornLines())
                .singleElement(InstanceOfAssertFactories.STRING)
                .contains("client-1.jsonl line 2 is torn")
                .contains("killed while writing it")
                .contains(OK.substring(0, 20));
    }

    @Test
    void aTornLastLineThatEndsInsideACharacterIsLeftOutLikeAnyTornLine() throws IOException {
        // given: the client was killed while writing an info line whose error is not ASCII, after the first of the
        // two bytes of its 'é'
        String info = OK.replace("\"ok\"", "\"info\"").replace("}", ",\"error\":\"d\u00e9lai d\u00e9pass\u00e9\"}");
        byte[] whole = info.getBytes(StandardCharsets.UTF_8);
        int cut = info.indexOf('\u00e9') + 1;
        ByteArrayOutputStream file = new ByteArrayOutputStream();
        file.write((INVOKE + "\n").getBytes(StandardCharsets.UTF_8));
        file.write(whole, 0, cut);
        Files.write(directory.resolve("client-1.jsonl"), file.toByteArray());

        // when
        History history = History.read(directory);

        // then
        assertThat(history.operation(1000001).orElseThrow().outcome()).isEqualTo(Outcome.INFO);
        assertThat(history.tornLines())
                .singleElement(InstanceOfAssertFactories.STRING)
                .contains("line 2 is torn");
    }

    @Test
    void anUnreadableLastLineThatEndsWithANewlineWasWrittenWholeAndMakesTheHistoryUnusable() throws IOException {
        // given: the append's ok line, complete, but with its time written as text: left out, the acknowledged
        // append would count as indeterminate, and its loss from the list would go unseen
        Files.writeString(
                directory.resolve("client-1.jsonl"),
                INVOKE + "\n" + OK.replace("\"time\":1700000000005", "\"time\":\"1700000000005\"") + "\n");

        assertThatThrownBy(() -> History.read(directory))
                .isInstanceOf(HistoryException.class)
                .hasMessageContaining("client-1.jsonl line 2 is unreadable")
                .hasMessageContaining("\"time\" must be a whole number")
                .hasMessageContaining("ends with a newline");
    }

    @Test
    void aNumberThatIsNotJsonIsUnreadableRatherThanReadAsAnotherNumber() throws IOException {
        // given: the invoke's op written with a leading zero, and the ok's time with a trailing point; JSON has
        // neither (a client writes neither), and read leniently they would be op 1000001 and its completion
        Files.writeString(
                directory.resolve("client-1.jsonl"),
                INVOKE.replace("\"op\":1000001", "\"op\":01000001") + "\n" + OK + "\n");
        Files.writeString(
                directory.resolve("client-2.jsonl"),
                INVOKE + "\n" + OK.replace("\"time\":1700000000005", "\"time\":1700000000005.") + "\n");

        assertThatThrownBy(() -> History.read(List.of(directory.resolve("client-1.jsonl"))))
                .isInstanceOf(HistoryException.class)
                .hasMessageContaining("client-1.jsonl line 1 is unreadable (not a JSON number: 01000001");
        assertThatThrownBy(() -> History.read(List.of(directory.resolve("client-2.jsonl"))))
                .isInstanceOf(HistoryException.class)
                .hasMessageContaining("client-2.jsonl line 2 is unreadable (not a JSON number: 1700000000005.");
    }

    @Test
    void anUnreadableLineBeforeTheLastMakesTheHistoryUnusable() throws IOException {
        Files.writeString(directory.resolve("client-1.jsonl"), INVOKE.substring(0, 20) + "\n" + OK + "\n");

        assertThatThrownBy(() -> History.read(directory))
                .isInstanceOf(HistoryException.class)
                .hasMessageContaining("client-1.jsonl line 1 is unreadable")
                .hasMessageContaining("more lines follow it");
    }

    @Test
    void aBlankLineMakesTheHistoryUnusableNamingItsLine() throws IOException {
        // a client writes each line whole, a JSON object and its newline, so a blank line is none of its lines but
        // a file cut, filled or edited by something else: skipped, it would hide what that did to the history
        Files.writeString(directory.resolve("client-1.jsonl"), INVOKE + "\n\n" + OK + "\n");
        Files.writeString(directory.resolve("client-2.jsonl"), INVOKE.replace("1000001", "2000001") + "\n \n");

        assertThatThrownBy(() -> History.read(List.of(directory.resolve("client-1.jsonl"))))
                .isInstanceOf(HistoryException.class)
                .hasMessageContaining("client-1.jsonl line 2 is unreadable (a blank line)")
                .hasMessageContaining("more lines follow it");
        assertThatThrownBy(() -> History.read(List.of(directory.resolve("client-2.jsonl"))))
                .isInstanceOf(HistoryException.class)
                .hasMessageContaining("client-2.jsonl line 2 is unreadable (a blank line)")
                .hasMessageContaining("ends with a newline");
    }

    @Test
    void aGrantOrAReadWithANumberOutOfRangeIsUnreadableNamingTheNumbers() throws IOException {
        // the message named no value: which of four numbers, and what it held, had to be found in the file
        Files.writeString(
                directory.resolve("client-1.jsonl"),
                "{\"type\":\"ok\",\"f\":\"grant\",\"op\":1000001,\"client\":1,\"resource\":\"r1\","
                        + "\"token\":0,\"time\":1000}\n");
        Files.writeString(
                directory.resolve("client-2.jsonl"),
                "{\"type\":\"invoke\",\"f\":\"read\",\"op\":2000001,\"client\":4294967298,"
                        + "\"resource\":\"r1\",\"token\":3,\"time\":1000}\n");

        assertThatThrownBy(() -> History.read(List.of(directory.resolve("client-1.jsonl"))))
                .isInstanceOf(HistoryException.class)
                .hasMessageContaining("client-1.jsonl line 1 is unreadable")
                .hasMessageContaining("in a grant, got op 1000001, client 1, token 0, time 1000");
        assertThatThrownBy(() -> History.read(List.of(directory.resolve("client-2.jsonl"))))
                .isInstanceOf(HistoryException.class)
                .hasMessageContaining("client-2.jsonl line 1 is unreadable")
                .hasMessageContaining("in a read, got op 2000001, client 4294967298, token 3, time 1000");
    }

    @Test
    void anOpIdSharedByAReadAndAnAppendMakesTheHistoryUnusable() throws IOException {
        // ids are unique in the run: a violation names its operations by id, and one id for two operations names
        // neither
        String read = "{\"type\":\"invoke\",\"f\":\"read\",\"op\":1000001,\"client\":2,\"resource\":\"r1\","
                + "\"token\":3,\"time\":1700000000001}";
        Files.writeString(directory.resolve("client-1.jsonl"), INVOKE + "\n" + OK + "\n");
        Files.writeString(directory.resolve("client-2.jsonl"), read + "\n");

        assertThatThrownBy(() -> History.read(directory))
                .isInstanceOf(HistoryException.class)
                .hasMessageContaining("client-2.jsonl line 1")
                .hasMessageContaining("op 1000001 is both a read and an append");
        // in either order
        Files.writeString(directory.resolve("client-0.jsonl"), read + "\n");
        Files.delete(directory.resolve("client-2.jsonl"));
        assertThatThrownBy(() -> History.read(directory))
                .isInstanceOf(HistoryException.class)
                .hasMessageContaining("client-1.jsonl line 1")
                .hasMessageContaining("op 1000001 is both a read and an append");
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
    void anOperationWhoseClientWentOnWithoutItsCompletionLostThatLineAndMakesTheHistoryUnusable() throws IOException {
        // a client runs one operation at a time: op 1000001's ok line is missing, though its client invoked op
        // 1000002 after it; read as indeterminate, an acknowledged append lost from its list would go unseen
        String next = INVOKE.replace("1000001", "1000002").replace("1700000000000", "1700000000010");
        String nextOk = OK.replace("1000001", "1000002").replace("1700000000005", "1700000000015");
        Files.writeString(directory.resolve("client-1.jsonl"), String.join("\n", INVOKE, next, nextOk) + "\n");

        assertThatThrownBy(() -> History.read(directory))
                .isInstanceOf(HistoryException.class)
                .hasMessageContaining("client-1.jsonl line 2")
                .hasMessageContaining("op 1000001")
                .hasMessageContaining("no completion");
    }

    @Test
    void onlyTheLastOperationOfAFileMayLackItsCompletion() throws IOException {
        String next = INVOKE.replace("1000001", "1000002").replace("1700000000000", "1700000000010");
        Files.writeString(directory.resolve("client-1.jsonl"), String.join("\n", INVOKE, OK, PUBLISH, PUBLISHED, next));

        History history = History.read(directory);

        assertThat(history.operation(1000001).orElseThrow().outcome()).isEqualTo(Outcome.OK);
        assertThat(history.operation(1000002).orElseThrow().outcome()).isEqualTo(Outcome.INFO);
    }

    @Test
    void anAcknowledgedPublishThatDoesNotSayWhereItLandedMakesTheHistoryUnusable() throws IOException {
        // an ok publish carries the partition and offset Kafka acknowledged; read without its offset, the record
        // would be judged as one whose send timed out, and a stale record applied ahead of it in the log go unseen
        Path file = directory.resolve("client-1.jsonl");
        Files.writeString(file, String.join("\n", INVOKE, OK, PUBLISH, PUBLISHED.replace(",\"offset\":41", "")) + "\n");

        assertThatThrownBy(() -> History.read(directory))
                .isInstanceOf(HistoryException.class)
                .hasMessageContaining("client-1.jsonl line 4")
                .hasMessageContaining("\"offset\"");

        // and a partition beyond an int is refused, not cut to one (4294967298 is partition 2 cut to 32 bits)
        Files.writeString(
                file,
                String.join("\n", INVOKE, OK, PUBLISH, PUBLISHED.replace("\"partition\":2", "\"partition\":4294967298"))
                        + "\n");

        assertThatThrownBy(() -> History.read(directory))
                .isInstanceOf(HistoryException.class)
                .hasMessageContaining("client-1.jsonl line 4")
                .hasMessageContaining("4294967298");
    }

    @Test
    void aLastOperationWithoutItsCompletionIsNamedSoThatARunWhoseClientsStoppedOnTheirOwnCanRefuseIt()
            throws IOException {
        // op 1000001's publish has no completion: fine if its client was killed while it sent, a lost line if the
        // client stopped on its own (it finishes the operation it runs before it stops)
        Files.writeString(directory.resolve("client-1.jsonl"), String.join("\n", INVOKE, OK, PUBLISH) + "\n");
        Files.writeString(
                directory.resolve("client-2.jsonl"),
                String.join("\n", INVOKE, OK, PUBLISH, PUBLISHED)
                                .replace("1000001", "2000001")
                                .replace("\"client\":1", "\"client\":2")
                        + "\n");

        History history = History.read(directory);

        assertThat(history.operation(1000001).orElseThrow().publish().outcome()).isEqualTo(Outcome.INFO);
        assertThat(history.unfinished())
                .singleElement(InstanceOfAssertFactories.STRING)
                .contains("client-1.jsonl line 3", "op 1000001", "no completion");
    }

    @Test
    void aCompletionTimedBeforeItsInvokeMakesTheHistoryUnusableNamingBothTimes() throws IOException {
        // the real-time checks order operations by these times: a completion before its invoke (a client's clock
        // stepped back, or an edited file) would make them report a stale write that was not, or miss one
        Files.writeString(
                directory.resolve("client-1.jsonl"),
                INVOKE + "\n" + OK.replace("1700000000005", "1699999999990") + "\n");
        Files.writeString(
                directory.resolve("client-2.jsonl"),
                String.join("\n", INVOKE, OK, PUBLISH, PUBLISHED.replace("1700000000009", "1700000000004")) + "\n");
        String read = "{\"type\":\"invoke\",\"f\":\"read\",\"op\":1000002,\"client\":1,\"resource\":\"r1\","
                + "\"token\":3,\"time\":1700000000020}";
        String readOk = "{\"type\":\"ok\",\"f\":\"read\",\"op\":1000002,\"client\":1,\"resource\":\"r1\","
                + "\"token\":3,\"time\":1700000000019,\"seen\":0}";
        Files.writeString(directory.resolve("client-3.jsonl"), read + "\n" + readOk + "\n");

        assertThatThrownBy(() -> History.read(List.of(directory.resolve("client-1.jsonl"))))
                .isInstanceOf(HistoryException.class)
                .hasMessageContaining("client-1.jsonl line 2")
                .hasMessageContaining("op 1000001")
                .hasMessageContaining("1699999999990")
                .hasMessageContaining("1700000000000");
        assertThatThrownBy(() -> History.read(List.of(directory.resolve("client-2.jsonl"))))
                .isInstanceOf(HistoryException.class)
                .hasMessageContaining("client-2.jsonl line 4")
                .hasMessageContaining("publish of op 1000001")
                .hasMessageContaining("1700000000004")
                .hasMessageContaining("1700000000006");
        assertThatThrownBy(() -> History.read(List.of(directory.resolve("client-3.jsonl"))))
                .isInstanceOf(HistoryException.class)
                .hasMessageContaining("client-3.jsonl line 2")
                .hasMessageContaining("read 1000002")
                .hasMessageContaining("1700000000019")
                .hasMessageContaining("1700000000020");
        // a completion in the millisecond of its invoke is a fast operation
        Files.writeString(
                directory.resolve("client-4.jsonl"),
                INVOKE + "\n" + OK.replace("1700000000005", "1700000000000") + "\n");
        assertThat(History.read(List.of(directory.resolve("client-4.jsonl")))
                        .operation(1000001)
                        .orElseThrow()
                        .completeTime())
                .isEqualTo(1700000000000L);
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

    @Test
    void aUnicodeEscapeThatIsNotFourHexDigitsIsRefusedNotReadAsTheCharacterItsDigitsSpell() {
        // JSON's \\u takes exactly four hex digits; read by Integer.parseInt, "\\u+072" (a sign) and "\\u\uFF10072" (a
        // full-width digit) would both be 'r', and this line an operation of r1
        for (String escape : List.of("\\u+072", "\\u-072", "\\u\uFF10072")) {
            String line = INVOKE.replace("\"resource\":\"r1\"", "\"resource\":\"" + escape + "1\"");

            assertThatThrownBy(() -> HistoryEntry.parse(line))
                    .as(line)
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("\\u escape");
        }
        assertThat(HistoryEntry.parse(INVOKE.replace("\"r1\"", "\"\\u00721\"")).resource())
                .isEqualTo("r1");
    }
}
