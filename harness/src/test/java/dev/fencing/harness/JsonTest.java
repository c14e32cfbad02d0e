package dev.fencing.harness;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import org.junit.jupiter.api.Test;

class JsonTest {
    @Test
    void quotesEscapesAndSaysNullForNothing() {
        assertThat(Json.quote("a \"b\" \\ c\n\t\u0001")).isEqualTo("\"a \\\"b\\\" \\\\ c\\n\\t\\u0001\"");
        assertThat(Json.quote(Path.of("/tmp/x.json"))).isEqualTo("\"/tmp/x.json\"");
        assertThat(Json.quote(null)).isEqualTo("null");
    }
}
