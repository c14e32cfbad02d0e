package dev.fencing.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.fencing.testsupport.EtcdServers;
import java.io.File;
import java.net.MalformedURLException;
import java.net.URL;
import java.net.URLClassLoader;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.Test;

/**
 * What an etcd user who leaves Curator and ZooKeeper out of the application gets: the starter's whole
 * auto-configuration loads, and a {@code @FencedLocked} method runs under an etcd lock, on a class loader that has
 * this module's test class path less every Curator and ZooKeeper jar (stronger than a filtered class loader, whose
 * classes still link against the full class path).
 */
class EtcdWithoutCuratorIT {

    @Test
    void aLockedMethodRunsOnEtcdWithNoCuratorOrZooKeeperClassAnywhere() throws Exception {
        List<String> endpoints = EtcdServers.shared().endpoints();
        // not closed: jetcd's Netty threads still load classes from it for a moment after the context closed
        URLClassLoader withoutCurator =
                new URLClassLoader(classPathWithout("curator-", "zookeeper-"), ClassLoader.getPlatformClassLoader());
        {
            assertThatThrownBy(() -> withoutCurator.loadClass("org.apache.curator.framework.CuratorFramework"))
                    .isInstanceOf(ClassNotFoundException.class);
            assertThatThrownBy(() -> withoutCurator.loadClass("org.apache.zookeeper.ZooKeeper"))
                    .isInstanceOf(ClassNotFoundException.class);

            Thread me = Thread.currentThread();
            ClassLoader before = me.getContextClassLoader();
            me.setContextClassLoader(withoutCurator);
            Object tokens;
            try {
                tokens = withoutCurator
                        .loadClass(EtcdOnlyService.class.getName())
                        .getMethod("lockTwice", List.class, String.class)
                        .invoke(null, endpoints, "without-curator/" + UUID.randomUUID());
            } finally {
                me.setContextClassLoader(before);
            }
            @SuppressWarnings("unchecked")
            List<Long> granted = (List<Long>) tokens;
            assertThat(granted.get(0)).isPositive();
            assertThat(granted.get(1)).isGreaterThan(granted.get(0));
        }
    }

    /**
     * The test class path (as Surefire and Failsafe give it) less the jars whose name starts with one of {@code
     * prefixes}: Curator's and ZooKeeper's, not fencing-zookeeper's (whose {@code TokenSource} {@code @FencedLocked}
     * names; it loads without Curator).
     */
    private static URL[] classPathWithout(String... prefixes) throws MalformedURLException {
        String path = System.getProperty("surefire.test.class.path", System.getProperty("java.class.path"));
        List<URL> urls = new ArrayList<>();
        int left = 0;
        for (String entry : path.split(File.pathSeparator)) {
            String name = new File(entry).getName();
            boolean dropped = false;
            for (String prefix : prefixes) {
                dropped |= name.startsWith(prefix);
            }
            if (dropped) {
                left++;
            } else {
                urls.add(new File(entry).toURI().toURL());
            }
        }
        assertThat(left).as("Curator and ZooKeeper jars on the test class path").isGreaterThanOrEqualTo(2);
        return urls.toArray(URL[]::new);
    }
}
