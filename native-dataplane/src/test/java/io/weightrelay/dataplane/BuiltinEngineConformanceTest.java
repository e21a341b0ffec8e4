package io.weightrelay.dataplane;

import java.io.IOException;

/** The conformance suite against the built-in C++ engine, with peers in child JVMs. */
class BuiltinEngineConformanceTest extends DataplaneConformanceTest {

    @Override
    protected Dataplane open(String nodeLabel, String keyPrefix) {
        return Dataplane.open(TestEngines.config(nodeLabel, keyPrefix).build());
    }

    @Override
    protected Dataplane openRemover(String nodeLabel, String keyPrefix) {
        return Dataplane.open(TestEngines.config(nodeLabel, keyPrefix).remover(true).build());
    }

    @Override
    protected Dataplane openStorer(String nodeLabel, String keyPrefix) {
        return Dataplane.open(TestEngines.config(nodeLabel, keyPrefix).storer(true).build());
    }

    @Override
    protected PeerProcess startPeer(String nodeLabel, String keyPrefix, String segment, long size)
            throws IOException {
        return PeerProcess.start(RedisSupport.URI, keyPrefix, nodeLabel, segment, size);
    }
}
