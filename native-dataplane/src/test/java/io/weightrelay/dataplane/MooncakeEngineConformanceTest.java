package io.weightrelay.dataplane;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

/**
 * The shared conformance suite ({@link EngineConformanceTest}) on the real Mooncake ({@link
 * DataplaneEngine#MOONCAKE}, {@link MooncakeTestEngines}): store capacity is the segment each agent
 * mounts, local memory a receive segment (shared memory this JVM and the agent both map). What only
 * the Mooncake engine has: {@link MooncakeEngineOnlyTest}.
 */
class MooncakeEngineConformanceTest extends EngineConformanceTest {
    private static MooncakeTestEngines mooncake;

    @BeforeAll
    static void startMaster() throws Exception {
        mooncake = MooncakeTestEngines.start();
    }

    @AfterAll
    static void stopMaster() throws Exception {
        if (mooncake != null) {
            mooncake.close();
        }
    }

    @Override
    protected Dataplane open(String nodeLabel, String keyPrefix) {
        return mooncake.open(nodeLabel, keyPrefix);
    }

    /** The agent's mounted segment is the capacity: nothing to create. */
    @Override
    protected String storeCapacity(Dataplane dp, String name, long size) {
        return ((MooncakeDataplane) dp).storeSegment();
    }

    @Override
    protected LocalMemory memory(Dataplane dp, String name, int size) {
        return dp.createReceiveSegment(name, size);
    }
}
