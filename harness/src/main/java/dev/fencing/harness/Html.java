package dev.fencing.harness;

/** Text for the self-contained HTML reports. Stateless and thread-safe. */
public final class Html {
    private Html() {}

    /**
     * A self-contained HTML page (no scripts, no links out): {@code title}, the style sheet {@code css}, then {@code
     * body} as it is (escape what it quotes).
     */
    public static String page(String title, String css, CharSequence body) {
        return "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>" + escape(title)
                + "</title><style>\n" + css + "\n</style></head><body>\n" + body + "</body></html>\n";
    }

    /** {@code text} safe inside an element or a double-quoted attribute. */
    public static String escape(String text) {
        return text.replace("&", "&amp;")
                .replace("<", "&lt;")
                .replace(">", "&gt;")
                .replace("\"", "&quot;");
    }

    /**
     * The x at which a label of {@code chars} monospace characters (10 px font, about 6.1 px each) starting at or
     * after {@code x} ends inside an SVG {@code width} wide: {@code x}, or less where the label would be cut.
     */
    public static double labelX(double x, int chars, int width) {
        return Math.max(0, Math.min(x, width - 2 - chars * 6.1));
    }
}
