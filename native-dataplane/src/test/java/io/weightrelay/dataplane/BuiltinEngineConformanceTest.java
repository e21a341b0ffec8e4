package io.weightrelay.dataplane;

/**
 * The shared conformance suite ({@link EngineConformanceTest}) on the built-in C++ engine: store
 * capacity is a segment file it creates, local memory a direct buffer it registers. What only the
 * built-in engine has: {@link BuiltinEngineOnlyTest}.
 */
class BuiltinEngineConformanceTest extends EngineConformanceTest {

    @Override
    protected TestEngine engine() {
        return BuiltinTestEngine.INSTANCE;
    }
}
