package dev.fencing.verify.checker;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The checker must know nothing of the system it checks: it reads histories and database rows and imports
 * nothing but the JDK and its own package (no library module, no client, no Kafka, ZooKeeper or Jdbi).
 */
class CheckerIndependenceTest {

    @Test
    void theCheckerImportsOnlyTheJdkAndItself() throws IOException {
        Path sources = Path.of("src/main/java/dev/fencing/verify/checker");
        List<String> imports;
        try (Stream<Path> files = Files.list(sources)) {
            imports = files.filter(file -> file.toString().endsWith(".java"))
                    .flatMap(file -> {
                        try {
                            return Files.readAllLines(file).stream()
                                    .filter(line -> line.startsWith("import "))
                                    .map(line -> file.getFileName() + ": " + line);
                        } catch (IOException e) {
                            throw new java.io.UncheckedIOException(e);
                        }
                    })
                    .toList();
        }

        assertThat(imports).isNotEmpty();
        assertThat(imports).allSatisfy(line -> assertThat(line)
                .matches(".*: import (static )?(java\\.|javax\\.sql\\.|dev\\.fencing\\.verify\\.checker\\.).*"));
    }
}
