package dev.fencing.kafka;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * Every code sample in this module's javadoc ({@code <pre>{@code ...}</pre>}) stands, line for line, in a test
 * of this module ({@link JavadocSamplesIT} runs them against real servers), so a sample that no longer
 * compiles or no longer does what its javadoc says fails the build.
 */
class JavadocSamplesTest {
    private static final Path MAIN = Path.of("src", "main", "java");
    private static final Path TEST = Path.of("src", "test", "java");
    private static final Pattern SAMPLE = Pattern.compile("<pre>\\{@code\\n(.*?)}</pre>", Pattern.DOTALL);
    private static final Pattern COMMENT_PREFIX = Pattern.compile("(?m)^\\s*\\*( |$)");

    @Test
    void everyJavadocSampleStandsInATestOfThisModule() {
        List<String> samples = samples();
        String tests = normalizedSources(TEST);

        assertThat(samples).as("code samples in the javadoc of %s", MAIN).hasSizeGreaterThan(10);
        assertThat(samples.stream().filter(sample -> !tests.contains(normalized(sample))))
                .as("javadoc samples that do not stand, line for line (indentation aside), in a test of this module")
                .isEmpty();
    }

    @Test
    void theCheckNoticesASampleThatIsNotInATest() {
        assertThat(normalizedSources(TEST))
                .doesNotContain(normalized("OptionalLong maybe = FenceTokenHeader.read(record.headers());"));
    }

    private static List<String> samples() {
        List<String> samples = new ArrayList<>();
        try (Stream<Path> files = Files.walk(MAIN)) {
            for (Path file :
                    files.filter(p -> p.toString().endsWith(".java")).sorted().toList()) {
                Matcher m = SAMPLE.matcher(read(file));
                while (m.find()) {
                    samples.add(COMMENT_PREFIX.matcher(m.group(1)).replaceAll(""));
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return samples;
    }

    /** Each file normalized on its own, then joined. */
    private static String normalizedSources(Path root) {
        try (Stream<Path> files = Files.walk(root)) {
            return files.filter(p -> p.toString().endsWith(".java"))
                    .sorted()
                    .map(JavadocSamplesTest::read)
                    .map(JavadocSamplesTest::normalized)
                    .collect(Collectors.joining());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Lines trimmed, blank lines dropped: a sample may be indented differently from its source. */
    private static String normalized(String code) {
        return code.lines().map(String::strip).filter(l -> !l.isEmpty()).collect(Collectors.joining("\n", "\n", "\n"));
    }

    private static String read(Path path) {
        try {
            return Files.readString(path);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
