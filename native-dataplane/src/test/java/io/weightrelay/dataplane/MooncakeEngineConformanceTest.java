package io.weightrelay.dataplane;

import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The shared conformance suite ({@link EngineConformanceTest}) on the real Mooncake ({@link
 * DataplaneEngine#MOONCAKE}, {@link MooncakeTestEngines}): store capacity is the segment each agent
 * mounts, local memory a receive segment (shared memory this JVM and the agent both map). What only
 * the Mooncake engine has: {@link MooncakeEngineOnlyTest}.
 */
class MooncakeEngineConformanceTest extends EngineConformanceTest {
    @RegisterExtension static final MooncakeTestEngines mooncake = new MooncakeTestEngines();

    @Override
    protected TestEngine engine() {
        return mooncake;
    }
}
