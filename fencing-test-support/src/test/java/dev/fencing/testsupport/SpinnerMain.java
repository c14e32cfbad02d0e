package dev.fencing.testsupport;

/** A child JVM for freezer tests: several threads that never block, so each of them must take the stop. */
public final class SpinnerMain {
    private static volatile long sink;

    private SpinnerMain() {}

    public static void main(String[] args) throws InterruptedException {
        int threads = Integer.parseInt(args[0]);
        for (int i = 0; i < threads; i++) {
            Thread spinner = new Thread(() -> {
                long n = 0;
                while (true) {
                    sink = ++n;
                }
            });
            spinner.setDaemon(true);
            spinner.start();
        }
        System.out.println("SPINNING");
        System.out.flush();
        Thread.sleep(Long.MAX_VALUE);
    }
}
