package io.weightrelay.control;

import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * One {@link TestStore} shared by every test of a class, registered as {@code @RegisterExtension
 * static final SharedTestStore store = new SharedTestStore(STORE_PREFIX)}: opened before the
 * class's first test and closed after its last, so a test class that puts objects as a publisher
 * would does not open and close its own segment owner by hand.
 */
public final class SharedTestStore implements BeforeAllCallback, AfterAllCallback {

    private final String storePrefix;
    private TestStore store;

    public SharedTestStore(String storePrefix) {
        this.storePrefix = storePrefix;
    }

    /** The store of the running test class. */
    public TestStore get() {
        return store;
    }

    @Override
    public void beforeAll(ExtensionContext context) {
        store = new TestStore(storePrefix);
    }

    @Override
    public void afterAll(ExtensionContext context) {
        store.close();
    }
}
