package io.weightrelay.dataplane;

import java.nio.ByteBuffer;

/**
 * The built-in C++ engine under test: store capacity is a segment file it creates, local memory a
 * direct buffer it registers.
 */
enum BuiltinTestEngine implements TestEngine {
    INSTANCE;

    @Override
    public Dataplane open(String nodeLabel, String keyPrefix) {
        return Dataplane.open(TestEngines.config(nodeLabel, keyPrefix).build());
    }

    @Override
    public String storeCapacity(Dataplane dp, String name, long size) {
        return dp.createSegment(name, size).name();
    }

    @Override
    public LocalMemory memory(Dataplane dp, String name, int size) {
        return dp.registerBuffer(ByteBuffer.allocateDirect(size));
    }
}
