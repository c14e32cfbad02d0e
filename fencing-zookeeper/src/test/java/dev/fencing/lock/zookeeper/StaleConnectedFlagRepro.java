package dev.fencing.lock.zookeeper;

import static org.awaitility.Awaitility.await;

import com.sun.jdi.BooleanValue;
import com.sun.jdi.Bootstrap;
import com.sun.jdi.ObjectReference;
import com.sun.jdi.StackFrame;
import com.sun.jdi.StringReference;
import com.sun.jdi.ThreadReference;
import com.sun.jdi.VMDisconnectedException;
import com.sun.jdi.VirtualMachine;
import com.sun.jdi.connect.Connector;
import com.sun.jdi.connect.LaunchingConnector;
import com.sun.jdi.event.BreakpointEvent;
import com.sun.jdi.event.ClassPrepareEvent;
import com.sun.jdi.event.Event;
import com.sun.jdi.event.EventSet;
import com.sun.jdi.request.BreakpointRequest;
import com.sun.jdi.request.ClassPrepareRequest;
import com.sun.jdi.request.EventRequest;
import dev.fencing.testsupport.EmbeddedZooKeeper;
import dev.fencing.testsupport.ZooKeeperSessions;
import java.io.IOException;
import java.io.InputStream;
import java.time.Duration;
import java.util.Map;
import org.apache.curator.framework.CuratorFramework;
import org.apache.zookeeper.ZooKeeper;

/**
 * A deterministic reproduction, by hand (no test runner picks it up), of the stale connected flag that {@link
 * ZooKeeperClients#awaitReconnected} heals. A debugger (JDI) runs {@link Target} and parks the expired handle's event
 * thread in curator-client 5.9.0's {@code ConnectionState.process} at line 148, just before it writes {@code
 * isConnected=false} for the Expired event (the new handle already exists: {@code reset()} ran at line 146), until
 * the new handle's event thread has written {@code isConnected=true} (line 148 to 149); then lets it go. The target
 * prints {@code blockUntilConnectedOrTimedOut=false} after the connection timeout while its handle is CONNECTED.
 * With {@code nohold} nothing is held and it prints true. Line numbers are curator-client 5.9.0's.
 *
 * <pre>
 * mvn -o -q -pl fencing-zookeeper -am test-compile dependency:build-classpath \
 *     -Dmdep.outputFile=/tmp/cp.txt -Dmdep.includeScope=test
 * java -cp "$(cat /tmp/cp.txt):fencing-zookeeper/target/test-classes:fencing-zookeeper/target/classes" \
 *     dev.fencing.lock.zookeeper.StaleConnectedFlagRepro [hold|nohold]
 * </pre>
 */
public final class StaleConnectedFlagRepro {
    private StaleConnectedFlagRepro() {}

    public static void main(String[] args) throws Exception {
        boolean hold = args.length == 0 || !args[0].equals("nohold");
        LaunchingConnector connector = Bootstrap.virtualMachineManager().defaultConnector();
        Map<String, Connector.Argument> arguments = connector.defaultArguments();
        arguments.get("main").setValue(Target.class.getName());
        arguments.get("options").setValue("-cp " + System.getProperty("java.class.path"));
        VirtualMachine vm = connector.launch(arguments);
        pump(vm.process().getInputStream());
        pump(vm.process().getErrorStream());
        ClassPrepareRequest prepare = vm.eventRequestManager().createClassPrepareRequest();
        prepare.addClassFilter("org.apache.curator.ConnectionState");
        prepare.enable();
        ThreadReference held = null;
        boolean released = false;
        vm.resume();
        try {
            while (true) {
                EventSet set = vm.eventQueue().remove();
                boolean resume = true;
                for (Event event : set) {
                    if (event instanceof ClassPrepareEvent prepared) {
                        for (int line : new int[] {148, 149}) {
                            BreakpointRequest breakpoint = vm.eventRequestManager()
                                    .createBreakpointRequest(prepared.referenceType()
                                            .locationsOfLine(line)
                                            .get(0));
                            breakpoint.setSuspendPolicy(EventRequest.SUSPEND_EVENT_THREAD);
                            breakpoint.enable();
                        }
                    } else if (event instanceof BreakpointEvent hit) {
                        StackFrame frame = hit.thread().frame(0);
                        int line = hit.location().lineNumber();
                        boolean newIsConnected =
                                ((BooleanValue) frame.getValue(frame.visibleVariableByName("newIsConnected"))).value();
                        ObjectReference watched =
                                (ObjectReference) frame.getValue(frame.visibleVariableByName("event"));
                        ObjectReference state = (ObjectReference)
                                watched.getValue(watched.referenceType().fieldByName("keeperState"));
                        String kind = ((StringReference)
                                        state.getValue(state.referenceType().fieldByName("name")))
                                .value();
                        System.out.println("DEBUGGER " + hit.thread().name() + " at ConnectionState:" + line + " for "
                                + kind + ", newIsConnected=" + newIsConnected);
                        if (hold && line == 148 && kind.equals("Expired") && held == null && !released) {
                            held = hit.thread();
                            resume = false;
                            System.out.println("DEBUGGER holding it before isConnected.set(false)");
                        } else if (line == 149 && newIsConnected && held != null) {
                            System.out.println("DEBUGGER the new handle wrote true; releasing the expired handle's");
                            held.resume();
                            held = null;
                            released = true;
                        }
                    }
                }
                if (resume) {
                    set.resume();
                }
            }
        } catch (VMDisconnectedException done) {
            // the target exited
        }
    }

    private static void pump(InputStream in) {
        Thread pump = new Thread(() -> {
            try {
                in.transferTo(System.out);
            } catch (IOException ignored) {
                // the target exited
            }
        });
        pump.setDaemon(true);
        pump.start();
    }

    /** One injected expiry on a 1 s session, as in {@link InjectedExpiryIT}; prints what Curator believes after it. */
    public static final class Target {
        private Target() {}

        public static void main(String[] args) throws Exception {
            try (EmbeddedZooKeeper zk = EmbeddedZooKeeper.builder().build();
                    ZooKeeperClients clients = new ZooKeeperClients(zk.connectString())) {
                CuratorFramework client = clients.newClient(Duration.ofSeconds(1));
                client.blockUntilConnected();
                ZooKeeper before = client.getZookeeperClient().getZooKeeper();
                long instance = client.getZookeeperClient().getInstanceIndex();
                ZooKeeperSessions.injectExpiry(before);
                // until the Expired event made Curator replace the handle (reset)
                await().atMost(Duration.ofSeconds(30))
                        .until(() -> client.getZookeeperClient().getInstanceIndex() != instance);
                boolean connected = client.getZookeeperClient().blockUntilConnectedOrTimedOut();
                ZooKeeper after = client.getZookeeperClient().getZooKeeper();
                System.out.println("TARGET blockUntilConnectedOrTimedOut=" + connected + "; handle replaced="
                        + (after != before) + ", its state " + after.getState() + ", client state "
                        + client.getState());
            }
            System.exit(0);
        }
    }
}
