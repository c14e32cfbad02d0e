package dev.fencing.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.fencing.InvalidFenceTokenException;
import java.nio.charset.StandardCharsets;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.junit.jupiter.api.Test;

class FencedRecordsTest {

    @Test
    void createsARecordKeyedByResourceWithTheTokenHeader() {
        ProducerRecord<String, String> record = FencedRecords.create("inventory", "sku-1", "reserve", 7);

        assertThat(record.topic()).isEqualTo("inventory");
        assertThat(record.key()).isEqualTo("sku-1");
        assertThat(record.value()).isEqualTo("reserve");
        assertThat(record.partition()).isNull();
        assertThat(FenceTokenHeader.read(record.headers())).isEqualTo(7);
    }

    @Test
    void stampReplacesAnOldTokenAndKeepsOtherHeaders() {
        RecordHeaders headers = new RecordHeaders();
        headers.add("trace-id", "abc".getBytes(StandardCharsets.UTF_8));
        headers.add(FenceTokenHeader.NAME, FenceTokenHeader.encode(3));
        ProducerRecord<String, String> original = new ProducerRecord<>("t", 2, 1000L, "k", "v", headers);

        ProducerRecord<String, String> stamped = FencedRecords.stamp(original, 11);

        assertThat(stamped.partition()).isEqualTo(2);
        assertThat(stamped.timestamp()).isEqualTo(1000L);
        assertThat(stamped.headers().headers(FenceTokenHeader.NAME)).hasSize(1);
        assertThat(FenceTokenHeader.read(stamped.headers())).isEqualTo(11);
        assertThat(stamped.headers().lastHeader("trace-id"))
                .extracting(Header::value)
                .isEqualTo("abc".getBytes(StandardCharsets.UTF_8));
        assertThat(FenceTokenHeader.read(original.headers()))
                .as("original untouched")
                .isEqualTo(3);
    }

    @Test
    void refusesARecordWithoutKey() {
        assertThatThrownBy(() -> FencedRecords.create("inventory", null, "v", 7))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("inventory")
                .hasMessageContaining("no key");
    }

    @Test
    void refusesATokenThatIsNotPositive() {
        // the check every resource makes (fencing-core's, as fencing-jdbc's writes), naming the record
        assertThatThrownBy(() -> FencedRecords.create("inventory", "sku-1", "v", 0))
                .isInstanceOf(InvalidFenceTokenException.class)
                .hasMessageContaining("> 0, got 0 for topic inventory key sku-1");
    }
}
