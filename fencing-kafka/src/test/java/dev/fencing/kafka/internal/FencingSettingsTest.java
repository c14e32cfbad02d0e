package dev.fencing.kafka.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.fencing.kafka.FencedConsumerConfig;
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
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
}
