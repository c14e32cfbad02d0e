package dev.fencing.kafka.internal;

import java.nio.charset.StandardCharsets;

/** Record keys as log text: keys name resources and are fine to log, values never are. */
public final class Keys {
    private static final int MAX_SHOWN = 64;
    private static final char[] HEX = "0123456789abcdef".toCharArray();

    private Keys() {}

    /** The key as text if it is printable ASCII, else as {@code 0x...} hex; long keys are cut. */
    public static String describe(byte[] key) {
        if (key == null) {
            return "<null>";
        }
        int shown = Math.min(key.length, MAX_SHOWN);
        boolean printable = true;
        for (int i = 0; i < shown && printable; i++) {
            printable = key[i] >= 0x20 && key[i] < 0x7f;
        }
        StringBuilder text = new StringBuilder(shown * 2 + 8);
        if (printable) {
            text.append(new String(key, 0, shown, StandardCharsets.US_ASCII));
        } else {
            text.append("0x");
            for (int i = 0; i < shown; i++) {
                text.append(HEX[(key[i] >> 4) & 0xf]).append(HEX[key[i] & 0xf]);
            }
        }
        if (shown < key.length) {
            text.append("...(").append(key.length).append(" bytes)");
        }
        return text.toString();
    }
}
