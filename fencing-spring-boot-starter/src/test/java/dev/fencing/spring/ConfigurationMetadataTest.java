package dev.fencing.spring;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * The configuration metadata that IDEs complete {@code fencing.*} properties from is generated at build
 * time by spring-boot-configuration-processor, and describes every property.
 */
class ConfigurationMetadataTest {
    private static final Pattern NAME = Pattern.compile("\"name\"\\s*:\\s*\"([^\"]+)\"");

    @Test
    void everyFencingPropertyIsDescribedInTheGeneratedMetadata() throws IOException {
        String json;
        try (InputStream in = getClass().getResourceAsStream("/META-INF/spring-configuration-metadata.json")) {
            assertThat(in).as("generated metadata").isNotNull();
            json = new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
        // each property's entry runs from its "name" to the next one's; hints follow the properties
        String properties = json.substring(json.indexOf("\"properties\""));
        int hints = properties.indexOf("\"hints\"");
        if (hints >= 0) {
            properties = properties.substring(0, hints);
        }
        List<String> names = new ArrayList<>();
        List<String> undescribed = new ArrayList<>();
        Matcher m = NAME.matcher(properties);
        List<int[]> spans = new ArrayList<>();
        while (m.find()) {
            names.add(m.group(1));
            spans.add(new int[] {m.start(), m.end()});
        }
        for (int k = 0; k < spans.size(); k++) {
            int end = k + 1 < spans.size() ? spans.get(k + 1)[0] : properties.length();
            if (!properties.substring(spans.get(k)[1], end).contains("\"description\"")) {
                undescribed.add(names.get(k));
            }
        }
        assertThat(names)
                .contains(
                        "fencing.lock-service",
                        "fencing.zookeeper.connect-string",
                        "fencing.zookeeper.digest.user",
                        "fencing.etcd.endpoints",
                        "fencing.etcd.lease-ttl",
                        "fencing.etcd.password",
                        "fencing.locks.token-source",
                        "fencing.jdbc.policy",
                        "fencing.redis.policy",
                        "fencing.redis.wait-timeout",
                        "fencing.flyway.enabled",
                        "fencing.kafka.consumers",
                        "fencing.shedlock.path-prefix",
                        "fencing.election.path",
                        "fencing.election.participant-id",
                        "management.health.fencing.enabled");
        assertThat(undescribed).isEmpty();
    }
}
