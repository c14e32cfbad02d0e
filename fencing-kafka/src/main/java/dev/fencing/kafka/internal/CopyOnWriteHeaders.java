package dev.fencing.kafka.internal;

import java.util.Iterator;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.Headers;
import org.apache.kafka.common.header.internals.RecordHeaders;

/**
 * The headers a record's deserializers and handler get: the fetched record's own until one of them changes them,
 * then a copy of their own. Kafka's headers are mutable, and the fetched ones must stay as fetched for the
 * record's dead letter and its next deserialization (a key-parallel retry, a commit group rerun). A copy for every
 * record cost the consumer's thread an array and two lists a record; most deserializers and handlers only read
 * headers, or never look at them. What can change the list makes the copy first: {@code add}, {@code remove}, and
 * {@link #iterator()}, which can remove (Kafka's iterator of one key's headers cannot). The bytes of a header's
 * value are shared either way, as the key's and value's are. Not thread-safe, like {@link RecordHeaders}.
 */
final class CopyOnWriteHeaders implements Headers {
    private final Headers fetched;
    private Headers own; // null until something may change the list

    CopyOnWriteHeaders(Headers fetched) {
        this.fetched = fetched;
    }

    private Headers own() {
        if (own == null) {
            own = new RecordHeaders(fetched.toArray());
        }
        return own;
    }

    private Headers current() {
        return own != null ? own : fetched;
    }

    @Override
    public Headers add(Header header) {
        own().add(header);
        return this;
    }

    @Override
    public Headers add(String key, byte[] value) {
        own().add(key, value);
        return this;
    }

    @Override
    public Headers remove(String key) {
        own().remove(key);
        return this;
    }

    @Override
    public Header lastHeader(String key) {
        return current().lastHeader(key);
    }

    @Override
    public Iterable<Header> headers(String key) {
        return current().headers(key); // Kafka's iterator of one key's headers does not remove
    }

    @Override
    public Header[] toArray() {
        return current().toArray();
    }

    @Override
    public Iterator<Header> iterator() {
        return own().iterator();
    }

    @Override
    public String toString() {
        return current().toString();
    }
}
