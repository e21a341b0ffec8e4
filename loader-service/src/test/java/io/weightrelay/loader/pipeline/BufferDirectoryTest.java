package io.weightrelay.loader.pipeline;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.weightrelay.dataplane.ForeignBuffer;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Where buffers in a worker's own Transfer Engine memory sit in the loader's directory. */
class BufferDirectoryTest {
    private static final ForeignBuffer TE = new ForeignBuffer("127.0.0.1:15001", 1 << 20);

    @Test
    void aTransferEngineSegmentPacksItsBuffersAsAnyAndOneMemoryPerSegment() {
        BufferDirectory d =
                new BufferDirectory(
                        List.of(
                                new WorkerBuffers(
                                        "w0",
                                        List.of(
                                                new BufferSpec("a", "w0-te", 10, TE),
                                                new BufferSpec("b", "w0-te", 10, TE))),
                                new WorkerBuffers("w1", List.of(new BufferSpec("a", "w1", 10)))));
        assertThat(d.foreign("w0-te")).isEqualTo(TE);
        assertThat(d.foreign("w1")).isNull();
        assertThat(d.require("w0", "b").base()).isEqualTo(BufferDirectory.ALIGNMENT);

        assertThatThrownBy(
                        () ->
                                new BufferDirectory(
                                        List.of(
                                                new WorkerBuffers(
                                                        "w0",
                                                        List.of(
                                                                new BufferSpec(
                                                                        "a", "w0-te", 10, TE),
                                                                new BufferSpec(
                                                                        "b", "w0-te", 10))))))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("a segment is one memory");
    }

    /**
     * control-api answers the group's buffers by segment name only: a loader's own registration,
     * laid over them, says which of its workers' segments are Transfer Engine memory. (Without it,
     * prepare registered such a segment as shared memory of the loader, and the pushes landed there
     * instead of in the worker.)
     */
    @Test
    void aLoadersOwnRegistrationSaysWhereItsWorkersMemoryIs() {
        WorkerBuffers fromControlApi =
                new WorkerBuffers("w0", List.of(new BufferSpec("a", "w0-te", 10)));
        WorkerBuffers other = new WorkerBuffers("w1", List.of(new BufferSpec("a", "w1", 10)));
        BufferDirectory group = new BufferDirectory(List.of(fromControlApi, other));
        assertThat(group.foreign("w0-te")).isNull();

        WorkerBuffers own = new WorkerBuffers("w0", List.of(new BufferSpec("a", "w0-te", 10, TE)));
        BufferDirectory merged = group.withOwnWorkers(List.of(own));
        assertThat(merged.foreign("w0-te")).isEqualTo(TE);
        assertThat(merged.require("w1", "a")).isEqualTo(group.require("w1", "a"));
        assertThat(group.withOwnWorkers(List.of(fromControlApi))).isSameAs(group);
    }
}
