package dev.fencing.verify;

import dev.fencing.testsupport.NetworkNamespace;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The network of a run with partitions: each writer in a network namespace of its own, joined to this host by a
 * veth pair, and a hub namespace whose veth's host end holds the two addresses the servers listen on: one for
 * the lock service (ZooKeeper or etcd), one for PostgreSQL and Kafka. Cutting a writer off the lock service is a
 * blackhole route to its address inside the writer's namespace; PostgreSQL and Kafka stay reachable. All addresses lie in one free {@code
 * 10.250.X.0/24} on interfaces made here (/30 pairs): the hub takes .1/.2 (the lock service) and .5/.6 (data), writer
 * {@code i} takes {@code 4(i+1)+1} on the host side and {@code 4(i+1)+2} inside.
 *
 * <p>Namespaces are named {@code fvy<pid>-<n>hub} and {@code fvy<pid>-<n>c<i>}, {@code n} counting the networks
 * this process made, so that a namespace an earlier network of the same process could not delete (two runs in
 * one test JVM) does not block the next; {@link #removeAbandoned()} deletes those of dead processes. {@link
 * #close()} deletes all of them, going on past one that fails. Thread-safe.
 */
final class VerifyNetwork implements AutoCloseable {
    static final String PREFIX = "fvy";
    private static final AtomicInteger CREATED = new AtomicInteger();

    private final String subnet;
    private final NetworkNamespace hub;
    private final List<NetworkNamespace> clients;

    private VerifyNetwork(String subnet, NetworkNamespace hub, List<NetworkNamespace> clients) {
        this.subnet = subnet;
        this.hub = hub;
        this.clients = clients;
    }

    /** Deletes namespaces and veths of earlier runs whose process is gone; returns their names. */
    static List<String> removeAbandoned() {
        return NetworkNamespace.removeAbandoned(PREFIX);
    }

    /** Creates the hub and {@code clients} writer namespaces; removes what it made if one fails. */
    static VerifyNetwork create(int clients) {
        String subnet = NetworkNamespace.freeSubnet();
        String generation = Integer.toString(CREATED.incrementAndGet(), 36);
        List<NetworkNamespace> made = new ArrayList<>();
        try {
            NetworkNamespace hub = NetworkNamespace.builder(NetworkNamespace.ownedName(PREFIX, generation + "hub"))
                    .link(subnet + ".1", subnet + ".2", 30)
                    .link(subnet + ".5", subnet + ".6", 30)
                    .build();
            made.add(hub);
            List<NetworkNamespace> writers = new ArrayList<>();
            for (int i = 1; i <= clients; i++) {
                int base = 4 * (i + 1);
                NetworkNamespace writer = NetworkNamespace.builder(
                                NetworkNamespace.ownedName(PREFIX, generation + "c" + i))
                        .link(subnet + "." + (base + 1), subnet + "." + (base + 2), 30)
                        .build();
                made.add(writer);
                writers.add(writer);
            }
            return new VerifyNetwork(subnet, hub, List.copyOf(writers));
        } catch (RuntimeException e) {
            made.forEach(NetworkNamespace::close);
            throw e;
        }
    }

    /** The address the lock service (ZooKeeper or etcd) listens on; cut inside a writer's namespace to partition it. */
    String lockAddress() {
        return subnet + ".1";
    }

    /** The address PostgreSQL and Kafka listen on. */
    String dataAddress() {
        return subnet + ".5";
    }

    /** The network every writer's address lies in, for PostgreSQL's trusted clients. */
    String clientNetwork() {
        return subnet + ".0/24";
    }

    /** Writer {@code i}'s namespace (from 1). */
    NetworkNamespace client(int i) {
        return clients.get(i - 1);
    }

    /** Every namespace's name, for the watchdog. */
    List<String> names() {
        List<String> names = new ArrayList<>();
        names.add(hub.name());
        clients.forEach(c -> names.add(c.name()));
        return names;
    }

    @Override
    public void close() {
        List<NetworkNamespace> all = new ArrayList<>(clients);
        all.add(hub);
        RuntimeException failure = null;
        for (NetworkNamespace namespace : all) {
            try {
                namespace.close();
            } catch (RuntimeException e) {
                if (failure == null) {
                    failure = e;
                } else {
                    failure.addSuppressed(e);
                }
            }
        }
        if (failure != null) {
            throw failure;
        }
    }
}
