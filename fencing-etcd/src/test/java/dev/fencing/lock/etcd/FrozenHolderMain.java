package dev.fencing.lock.etcd;

import dev.fencing.lock.Lease;
import io.etcd.jetcd.Client;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;

/**
 * A holder in a JVM of its own for {@link FrozenHolderIT}: acquires the lock, prints its token, then checks its
 * lease over and over, printing {@code BEGIN n} before the n-th check and {@code RESULT n valid cause} after it.
 * Arguments: etcd endpoints (comma-separated), key prefix, lease TTL in seconds.
 */
public final class FrozenHolderMain {
    private FrozenHolderMain() {}

    public static void main(String[] args) throws Exception {
        PrintStream out = new PrintStream(System.out, true, StandardCharsets.UTF_8);
        Client client = Client.builder().endpoints(args[0].split(",")).build();
        EtcdLocks locks = EtcdLocks.builder(client)
                .prefix(args[1])
                .leaseTtl(Duration.ofSeconds(Long.parseLong(args[2])))
                .build();
        Lease lease = locks.lock("frozen").acquire();
        out.println("TOKEN " + lease.token());
        for (long check = 0; ; check++) {
            out.println("BEGIN " + check);
            boolean valid = lease.isValid();
            out.println("RESULT " + check + " " + valid + " " + lease.lossCause());
            Thread.sleep(10);
        }
    }
}
