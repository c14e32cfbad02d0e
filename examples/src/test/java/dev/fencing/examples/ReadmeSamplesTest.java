package dev.fencing.examples;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.assertj.core.api.InstanceOfAssertFactories;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Every Java sample in the README and in the manual under {@code docs/} stands, line for line, in the example
 * service under {@code inventory-service} (which the invoker plugin builds from the installed artifacts and
 * whose test runs it against real servers) or in a test of this repository. So a sample that no longer
 * compiles, or no longer does what the page says, fails the build, naming the page.
 *
 * <p>A sample may begin with import lines: they need not stand together, but each must be an import of the
 * very file that holds the rest of the sample (or name a type of that file's own package, which the file uses
 * without an import), so a reader copies imports that compile with that code.
 */
class ReadmeSamplesTest {
    private static final Path EXAMPLE = Path.of("inventory-service", "src");
    private static final Path ROOT = Path.of("..");
    private static final Pattern JAVA_BLOCK = Pattern.compile("```java\\n(.*?)```", Pattern.DOTALL);

    @Test
    void everyJavaSampleInTheReadmeAndTheDocsStandsInTheExampleServiceOrATest() {
        List<Path> pages = pages();
        List<Source> sources = exampleSources();

        assertThat(pages).as("README.md and docs/*.md").contains(ROOT.resolve("README.md"));
        assertThat(pages).as("pages under docs/").hasSizeGreaterThan(1);
        assertThat(samples(ROOT.resolve("README.md")))
                .as("Java samples in README.md")
                .isNotEmpty();
        List<String> missing = pages.stream()
                .flatMap(page -> samplesMissingFrom(sources, page).stream())
                .toList();
        assertThat(missing)
                .as("samples that stand, line for line (indentation aside) and with their imports, neither in"
                        + " examples/inventory-service nor in a test of this repository")
                .isEmpty();
    }

    @Test
    void theCheckNoticesASampleThatIsNotInTheExampleAndNamesItsPage(@TempDir Path dir) throws IOException {
        List<Source> sources = exampleSources();
        assertThat(sources)
                .noneMatch(s -> s.code().contains(normalized("writer.tryUpdate(reserve, lease.token() + 1);")));

        Path page = Files.writeString(
                dir.resolve("stale.md"),
                "# A page\n\n```java\nwriter.tryUpdate(reserve, lease.token() + 1);\n```\n\n"
                        + "```java\nWriteOutcome outcome = writer.tryUpdate(reserve, token);"
                        + " // Applied | Rejected | NotFound | PredicateFailed\n```\n");
        assertThat(samplesMissingFrom(sources, page))
                .singleElement(InstanceOfAssertFactories.STRING)
                .contains(page.toString())
                .contains("writer.tryUpdate(reserve, lease.token() + 1);");
    }

    @Test
    void theCheckNoticesAnImportThatTheFileHoldingTheSampleDoesNotHave(@TempDir Path dir) throws IOException {
        List<Source> sources = exampleSources();
        String code = "WriteOutcome outcome = writer.tryUpdate(reserve, token);"
                + " // Applied | Rejected | NotFound | PredicateFailed\n";

        Path page = Files.writeString(
                dir.resolve("imports.md"),
                "```java\nimport dev.fencing.jdbc.WriteOutcome;\n\n" + code + "```\n\n"
                        + "```java\nimport dev.fencing.kafka.WriteOutcome;\n\n" + code + "```\n");
        assertThat(samplesMissingFrom(sources, page))
                .singleElement(InstanceOfAssertFactories.STRING)
                .contains("import dev.fencing.kafka.WriteOutcome;");
    }

    @Test
    void theCheckReadsThePagesUnderDocs() {
        Path kafka = ROOT.resolve("docs").resolve("kafka.md");
        assertThat(pages()).contains(kafka);
        assertThat(samples(kafka)).anySatisfy(s -> assertThat(s).contains("FencedRowHandler"));
    }

    /** Each Java sample of {@code page} that no source holds, prefixed with the page's path. */
    private static List<String> samplesMissingFrom(List<Source> sources, Path page) {
        return samples(page).stream()
                .filter(sample -> sources.stream().noneMatch(source -> source.holds(sample)))
                .map(sample -> String.format("%s:%n%s", page.normalize(), sample))
                .toList();
    }

    /** README.md, then every Markdown page directly under docs/. */
    private static List<Path> pages() {
        try (Stream<Path> docs = Files.list(ROOT.resolve("docs"))) {
            return Stream.concat(
                            Stream.of(ROOT.resolve("README.md")),
                            docs.filter(p -> p.toString().endsWith(".md")).sorted())
                    .toList();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** The Java blocks of one page. */
    private static List<String> samples(Path page) {
        List<String> samples = new ArrayList<>();
        Matcher m = JAVA_BLOCK.matcher(read(page));
        while (m.find()) {
            samples.add(m.group(1));
        }
        return samples;
    }

    /** The example service's sources, then every module's test sources. */
    private static List<Source> exampleSources() {
        Map<String, Set<String>> typesByPackage = typesByPackage();
        try (Stream<Path> modules = Files.list(ROOT)) {
            Stream<Path> roots = Stream.concat(
                    Stream.of(EXAMPLE),
                    modules.map(m -> m.resolve("src/test/java")).filter(Files::isDirectory));
            return roots.flatMap(ReadmeSamplesTest::javaFiles)
                    .map(ReadmeSamplesTest::read)
                    .map(text -> Source.of(text, typesByPackage))
                    .toList();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** The top-level types of every package, by their files' names, in every module's main and test sources. */
    private static Map<String, Set<String>> typesByPackage() {
        try (Stream<Path> modules = Files.list(ROOT)) {
            Stream<Path> roots = Stream.concat(
                    Stream.of(EXAMPLE),
                    modules.flatMap(m -> Stream.of(m.resolve("src/main/java"), m.resolve("src/test/java")))
                            .filter(Files::isDirectory));
            return roots.flatMap(ReadmeSamplesTest::javaFiles)
                    .collect(Collectors.groupingBy(
                            ReadmeSamplesTest::packageOf,
                            Collectors.mapping(
                                    f -> f.getFileName().toString().replaceFirst("\\.java$", ""), Collectors.toSet())));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static String packageOf(Path javaFile) {
        return packageOf(read(javaFile));
    }

    private static String packageOf(String text) {
        return normalizedLines(text)
                .filter(l -> l.startsWith("package "))
                .map(l -> l.substring("package ".length(), l.length() - 1).strip())
                .findFirst()
                .orElse("");
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
        return normalizedLines(code).collect(Collectors.joining("\n", "\n", "\n"));
    }

    private static Stream<String> normalizedLines(String code) {
        return code.lines().map(String::strip).filter(l -> !l.isEmpty());
    }

    private static boolean isImport(String line) {
        return line.startsWith("import ");
    }

    private static String read(Path path) {
        try {
            return Files.readString(path);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /**
     * One source file: its text normalized, and the import lines a reader needs for its code: its own, and one
     * for each type of its package (which the file uses without an import).
     */
    private record Source(String code, Set<String> imports) {
        static Source of(String text, Map<String, Set<String>> typesByPackage) {
            Set<String> imports =
                    normalizedLines(text).filter(ReadmeSamplesTest::isImport).collect(Collectors.toSet());
            String pkg = packageOf(text);
            typesByPackage.getOrDefault(pkg, Set.of()).forEach(type -> imports.add("import " + pkg + "." + type + ";"));
            return new Source(normalized(text), imports);
        }

        /** The sample's code stands here, and each import line it begins with is one this file's code needs. */
        boolean holds(String sample) {
            List<String> lines = normalizedLines(sample).toList();
            int firstCode = 0;
            while (firstCode < lines.size() && isImport(lines.get(firstCode))) {
                firstCode++;
            }
            List<String> code = lines.subList(firstCode, lines.size());
            return imports.containsAll(lines.subList(0, firstCode))
                    && (code.isEmpty() || this.code.contains(normalized(String.join("\n", code))));
        }
    }
}
