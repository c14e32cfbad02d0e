package dev.fencing.examples;

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
 * Every Java sample in the README stands, line for line, in the example service under {@code
 * inventory-service} (which the invoker plugin builds from the installed artifacts and whose test runs it
 * against real servers) or in a test of this repository. So a sample that no longer compiles, or no
 * longer does what the README says, fails the build.
 */
class ReadmeSamplesTest {
    private static final Path EXAMPLE = Path.of("inventory-service", "src");
    private static final Path ROOT = Path.of("..");
    private static final Pattern JAVA_BLOCK = Pattern.compile("```java\\n(.*?)```", Pattern.DOTALL);

    @Test
    void everyJavaSampleInTheReadmeStandsInTheExampleService() {
        String readme = read(Path.of("..", "README.md"));
        List<String> samples = new ArrayList<>();
        Matcher m = JAVA_BLOCK.matcher(readme);
        while (m.find()) {
            samples.add(m.group(1));
        }
        String sources = exampleSources();

        assertThat(samples).as("Java samples in README.md").isNotEmpty();
        for (String sample : samples) {
            assertThat(sources)
                    .as(
                            "this README sample, line for line (indentation aside), in examples/inventory-service or a"
                                    + " test of this repository:%n%s",
                            sample)
                    .contains(normalized(sample));
        }
    }

    @Test
    void theCheckNoticesASampleThatIsNotInTheExample() {
        String sources = exampleSources();
        assertThat(sources).doesNotContain(normalized("writer.tryUpdate(reserve, lease.token() + 1);"));
    }

    /** The example service's sources, then every module's test sources; each file normalized on its own. */
    private static String exampleSources() {
        try (Stream<Path> modules = Files.list(ROOT)) {
            Stream<Path> roots = Stream.concat(
                    Stream.of(EXAMPLE),
                    modules.map(m -> m.resolve("src/test/java")).filter(Files::isDirectory));
            return roots.flatMap(ReadmeSamplesTest::javaFiles)
                    .map(ReadmeSamplesTest::read)
                    .map(ReadmeSamplesTest::normalized)
                    .collect(Collectors.joining());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static Stream<Path> javaFiles(Path root) {
        try (Stream<Path> files = Files.walk(root)) {
            return files.filter(p -> p.toString().endsWith(".java")).sorted().toList().stream();
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
