package io.weightrelay.dataplane;

/**
 * The three things the engines do differently in a test: how one is opened, how a test gets store
 * capacity and how it gets local memory. {@link EngineTestSupport} asks the engine under test; the
 * conformance suite and an engine's own tests of the same engine share one implementation ({@link
 * BuiltinTestEngine}, {@link MooncakeTestEngines}).
 */
interface TestEngine {

    /** Opens an engine of the implementation under test, in this JVM. */
    Dataplane open(String nodeLabel, String keyPrefix);

    /**
     * Gives {@code dp} store capacity of about {@code size} bytes and returns the segment name a
     * {@link ReplicateConfig} prefers to place objects there.
     */
    String storeCapacity(Dataplane dp, String name, long size);

    /** Local memory of {@code dp} of {@code size} bytes: the source of puts and writes. */
    LocalMemory memory(Dataplane dp, String name, int size);
}
