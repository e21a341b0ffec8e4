package io.weightrelay.dataplane;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * What one test makes, undone after it: a key prefix of its own in the test Redis (every key under
 * it deleted after the test), and the engines and peers it opened (closed after the test, the last
 * opened first). Register it on a static field with {@code @RegisterExtension}; the class needs a
 * Redis, which is checked once before its first test.
 */
final class TestScope implements BeforeAllCallback, BeforeEachCallback, AfterEachCallback {

    private final List<AutoCloseable> opened = new ArrayList<>();
    private String prefix;

    @Override
    public void beforeAll(ExtensionContext context) {
        RedisSupport.requireRedis();
    }

    @Override
    public void beforeEach(ExtensionContext context) {
        prefix = RedisSupport.uniquePrefix();
    }

    @Override
    public void afterEach(ExtensionContext context) throws Exception {
        try {
            for (int i = opened.size() - 1; i >= 0; i--) {
                opened.get(i).close();
            }
        } finally {
            opened.clear();
            RedisSupport.deleteKeys(prefix);
        }
    }

    /** This test's key prefix. */
    String prefix() {
        return prefix;
    }

    /** Closes {@code resource} after the test; returns it. */
    <T extends AutoCloseable> T closeAfter(T resource) {
        opened.add(resource);
        return resource;
    }
}
