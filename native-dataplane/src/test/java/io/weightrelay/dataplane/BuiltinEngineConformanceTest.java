package io.weightrelay.dataplane;

import java.nio.ByteBuffer;

/**
 * The shared conformance suite ({@link EngineConformanceTest}) on the built-in C++ engine: store
 * capacity is a segment file it creates, local memory a direct buffer it registers. What only the
 * built-in engine has: {@link BuiltinEngineOnlyTest}.
 */
class BuiltinEngineConformanceTest extends EngineConformanceTest {

    @Override
    protected Dataplane open(String nodeLabel, String keyPrefix) {
        return Dataplane.open(TestEngines.config(nodeLabel, keyPrefix).build());
    }

    @Override
    protected String storeCapacity(Dataplane dp, String name, long size) {
        return dp.createSegment(name, size).name();
    }

    @Override
    protected LocalMemory memory(Dataplane dp, String name, int size) {
        return dp.registerBuffer(ByteBuffer.allocateDirect(size));
    }
}
