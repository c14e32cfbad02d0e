package dev.fencing.kafka.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.fencing.kafka.FencedConsumerConfig;
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.time.Duration;
import org.junit.jupiter.api.Test;

class FencingSettingsTest {

    @Test
    void everyPublicConfigKeyIsDefinedInTheTableWithItsDoc() throws Exception {
        int keys = 0;
        for (Field field : FencedConsumerConfig.class.getFields()) {
            if (Modifier.isStatic(field.getModifiers()) && field.getName().endsWith("_CONFIG")) {
                String key = (String) field.get(null);
                FencingSetting<?> setting = FencingSettings.byKey(key);
                assertThat(setting).as(key).isNotNull();
                String docName = field.getName().replace("_CONFIG", "_DOC");
                assertThat(setting.doc())
                        .as(key)
                        .isEqualTo(FencedConsumerConfig.class.getField(docName).get(null));
                keys++;
            }
        }
        assertThat(FencingSettings.keys()).hasSize(keys);
    }

    @Test
    void aPropertyAndABuilderValueGoThroughTheSameCheck() {
        assertThat(FencingSettings.POLL_TIMEOUT.fromProperty("250")).isEqualTo(Duration.ofMillis(250));
        assertThatThrownBy(() -> FencingSettings.POLL_TIMEOUT.fromProperty("0"))
                .hasMessageContaining("fencing.poll.timeout.ms=0: pollTimeout must be positive");
        assertThatThrownBy(() -> FencingSettings.POLL_TIMEOUT.checked(Duration.ZERO))
                .hasMessageContaining("pollTimeout must be positive");
        assertThatThrownBy(() -> FencingSettings.COMMIT_MAX_RECORDS.fromProperty("many"))
                .hasMessageContaining("fencing.commit.max.records must be a whole number, got 'many'");
        assertThatThrownBy(() -> FencingSettings.WATERMARK_CACHE_MAX_KEYS.fromProperty("3000000000"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining(
                        "fencing.watermark.cache.max.keys must be a whole number from -2147483648 to 2147483647, got '3000000000'");
        assertThatThrownBy(() -> FencingSettings.WATERMARK_CACHE_MAX_KEYS.fromProperty(-3_000_000_000L))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining(
                        "fencing.watermark.cache.max.keys must be a whole number from -2147483648 to 2147483647, got '-3000000000'");
        assertThat(FencingSettings.POLL_TIMEOUT.defaultValue())
                .isEqualTo(Duration.ofMillis(FencedConsumerConfig.DEFAULT_POLL_TIMEOUT_MS));
    }

    @Test
    void aNumberThatIsNotAWholeOneIsRefusedNamingItNotCutToOne() {
        // a fraction cut to a whole number would change the setting's meaning: 0.5 records to 0 (no limit by
        // count), 1.9 workers to 1 (the serial consumer), 0.9 ms of retries to 0 (nothing retried)
        assertThatThrownBy(() -> FencingSettings.COMMIT_MAX_RECORDS.fromProperty(0.5))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("fencing.commit.max.records must be a whole number, got '0.5'");
        assertThatThrownBy(() -> FencingSettings.MAX_CONCURRENCY.fromProperty(1.9f))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("fencing.max.concurrency must be a whole number, got '1.9'");
        assertThatThrownBy(() -> FencingSettings.RETRY_MAX_TIME.fromProperty(new BigDecimal("0.9")))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("fencing.retry.max.ms must be a whole number, got '0.9'");
        assertThatThrownBy(() -> FencingSettings.COMMIT_MAX_RECORDS.fromProperty(Double.NaN))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("fencing.commit.max.records must be a whole number, got 'NaN'");
        // a whole number too large for a long is not wrapped around to a small one either
        assertThatThrownBy(() -> FencingSettings.COMMIT_MAX_RECORDS.fromProperty(
                        BigInteger.TWO.pow(64).add(BigInteger.TWO)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("fencing.commit.max.records must be a whole number, got '18446744073709551618'");
        // while a whole number of any type is taken as it is
        assertThat(FencingSettings.COMMIT_MAX_RECORDS.fromProperty(500.0)).isEqualTo(500L);
        assertThat(FencingSettings.MAX_CONCURRENCY.fromProperty((short) 8)).isEqualTo(8);
        assertThat(FencingSettings.RETRY_MAX_TIME.fromProperty(BigInteger.valueOf(90_000)))
                .isEqualTo(Duration.ofSeconds(90));
    }
}
