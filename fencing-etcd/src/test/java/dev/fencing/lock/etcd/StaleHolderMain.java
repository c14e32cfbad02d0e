package dev.fencing.lock.etcd;

import dev.fencing.jdbc.FencedTable;
import dev.fencing.jdbc.FencedWriter;
import dev.fencing.lock.Lease;
import io.etcd.jetcd.Client;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import org.jdbi.v3.core.Jdbi;

/**
 * A holder in a JVM of its own, for the tests that take its lock away ({@link FrozenHolderIT}, {@link
 * CutHolderIT}): acquires the lock, prints {@code TOKEN t}, then checks its lease over and over, printing {@code
 * BEGIN n} before the n-th check and {@code RESULT n valid cause} after it. Meanwhile it answers commands on its
 * standard input, each with one line: {@code CHECK} with {@code CHECK valid cause} (a check that begins after
 * the command was sent), {@code FENCED v} with {@code FENCED v outcome} (the {@link Ledger}'s row set to v
 * through fencing-jdbc, under this holder's token), {@code PLAIN v} with {@code PLAIN v rows} (the same write as
 * a plain UPDATE). Arguments: etcd endpoints (comma-separated), key prefix, lease TTL in seconds, the ledger's
 * JDBC URL and user, and the pause tolerance in milliseconds (0 for the default); the password in the environment
 * variable {@link #PASSWORD_ENV}.
 */
public final class StaleHolderMain {
    static final String PASSWORD_ENV = "LEDGER_PASSWORD";
    /** The lock's name under the prefix. */
    static final String LOCK = "ledger";

    private StaleHolderMain() {}

    public static void main(String[] args) throws Exception {
        PrintStream out = new PrintStream(System.out, true, StandardCharsets.UTF_8);
        Client client = Client.builder().endpoints(args[0].split(",")).build();
        EtcdLocks.Builder builder =
                EtcdLocks.builder(client).prefix(args[1]).leaseTtl(Duration.ofSeconds(Long.parseLong(args[2])));
        long pauseToleranceMillis = Long.parseLong(args[5]);
        if (pauseToleranceMillis > 0) {
            builder.pauseTolerance(Duration.ofMillis(pauseToleranceMillis));
        }
        EtcdLocks locks = builder.build();
        Jdbi jdbi = Jdbi.create(args[3], args[4], System.getenv().getOrDefault(PASSWORD_ENV, ""));
        Lease lease = locks.lock(LOCK).acquire();
        // to its log (standard error): whether the grant was already lost when acquire returned, and why
        System.err.println("granted token " + lease.token() + ", valid at the grant: " + lease.isValid() + " "
                + lease.lossCause());
        out.println("TOKEN " + lease.token());
        Thread commands = new Thread(() -> answer(lease, jdbi, out), "commands");
        commands.setDaemon(true);
        commands.start();
        for (long check = 0; ; check++) {
            out.println("BEGIN " + check);
            boolean valid = lease.isValid();
            out.println("RESULT " + check + " " + valid + " " + lease.lossCause());
            Thread.sleep(10);
        }
    }

    private static void answer(Lease lease, Jdbi jdbi, PrintStream out) {
        FencedWriter writer = FencedWriter.builder(jdbi).build();
        FencedTable table = Ledger.table(jdbi);
        try (BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
            for (String line = in.readLine(); line != null; line = in.readLine()) {
                String[] command = line.split(" ");
                switch (command[0]) {
                    case "CHECK" -> out.println("CHECK " + lease.isValid() + " " + lease.lossCause());
                    case "FENCED" -> {
                        int value = Integer.parseInt(command[1]);
                        out.println(
                                "FENCED " + value + " " + writer.tryUpdate(Ledger.update(table, value), lease.token()));
                    }
                    case "PLAIN" -> {
                        int value = Integer.parseInt(command[1]);
                        out.println("PLAIN " + value + " " + Ledger.writeUnfenced(jdbi, value));
                    }
                    default -> out.println("UNKNOWN " + line);
                }
            }
        } catch (IOException | RuntimeException e) {
            out.println("FAILED " + e);
        }
    }
}
