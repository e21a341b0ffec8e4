package io.weightrelay.lab.bench;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/** The bound's arithmetic and its measurements' bookkeeping; no rate is asserted. */
class YardsticksTest {

    private static final double GB = 1e9;

    @Test
    void theBoundMovesLocalBytesAtTheParallelCopyRateAndTcpBytesAtTheStreamsRate() {
        Yardsticks y = new Yardsticks(2 * GB, 5 * GB, 2, 8 * GB, 1 * GB, 3 * GB, 4);

        assertThat(y.moveSeconds(10_000_000_000L, 3_000_000_000L)).isCloseTo(3.0, within(1e-9));
        assertThat(y.singleThreadBoundSeconds(10_000_000_000L, 3_000_000_000L))
                .as("the old bound: one thread, one stream")
                .isCloseTo(8.0, within(1e-9));
    }

    /** A bound from faster rates is stricter: the parallel rate never makes it looser. */
    @Test
    void whereOneThreadOrOneStreamWasFasterTheBoundUsesIt() {
        Yardsticks y = new Yardsticks(6 * GB, 4 * GB, 2, 8 * GB, 3 * GB, 2 * GB, 4);

        assertThat(y.localRate()).isEqualTo(6 * GB);
        assertThat(y.tcpRate()).isEqualTo(3 * GB);
        assertThat(y.moveSeconds(6_000_000_000L, 3_000_000_000L))
                .isCloseTo(y.singleThreadBoundSeconds(6_000_000_000L, 3_000_000_000L), within(1e-9))
                .isCloseTo(2.0, within(1e-9));
    }

    /**
     * A one-sided write lands without its receiver touching it: proving it before install reads
     * every delivered byte once, at the parallel checksum rate.
     */
    @Test
    void theBoundReadsEveryDeliveredByteOnceAtTheParallelChecksumRate() {
        Yardsticks y = new Yardsticks(2 * GB, 5 * GB, 2, 8 * GB, 1 * GB, 3 * GB, 4);

        assertThat(y.boundSeconds(10_000_000_000L, 3_000_000_000L, 16_000_000_000L))
                .isCloseTo(3.0 + 2.0, within(1e-9));
        assertThat(y.boundSeconds(10_000_000_000L, 3_000_000_000L, 0))
                .as("an update that proves nothing")
                .isCloseTo(y.moveSeconds(10_000_000_000L, 3_000_000_000L), within(1e-9));
    }

    @Test
    void twoMeasurementsCombineToTheFasterOfEachRate() {
        Yardsticks before = new Yardsticks(5 * GB, 9 * GB, 2, 8 * GB, 2 * GB, 5 * GB, 4);
        Yardsticks after = new Yardsticks(6 * GB, 8 * GB, 2, 9 * GB, 1 * GB, 6 * GB, 4);

        assertThat(before.best(after))
                .isEqualTo(new Yardsticks(6 * GB, 9 * GB, 2, 9 * GB, 2 * GB, 6 * GB, 4));
    }

    @Test
    void measurementsOfOtherParallelismAreNotCombined() {
        Yardsticks two = new Yardsticks(5 * GB, 9 * GB, 2, 8 * GB, 2 * GB, 5 * GB, 4);

        assertThatThrownBy(
                        () ->
                                two.best(
                                        new Yardsticks(
                                                5 * GB, 9 * GB, 4, 8 * GB, 2 * GB, 5 * GB, 4)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("2 threads and 4 streams");
        assertThatThrownBy(() -> new Yardsticks(GB, GB, 0, 8 * GB, GB, GB, 1))
                .isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void theParallelCopyCopiesEverySliceAndCountsEveryThread() throws Exception {
        Yardsticks.Moved moved = Yardsticks.parallelMemcpy(3, 1 << 20);

        assertThat(moved.bytes()).isEqualTo(3L << 20);
        assertThat(moved.nanos()).isPositive();
    }

    @Test
    void theParallelChecksumReadsEverySliceAndCountsEveryThread() throws Exception {
        Yardsticks.Moved read = Yardsticks.parallelChecksum(3, 1 << 20);

        assertThat(read.bytes()).isEqualTo(3L << 20);
        assertThat(read.nanos()).isPositive();
    }

    @Test
    void everyStreamCarriesItsShareInWholeWritesAndEveryByteIsCounted() throws Exception {
        int chunk = Yardsticks.SOCKET_CHUNK;

        assertThat(Yardsticks.loopback(3, 6L * chunk).bytes()).isEqualTo(6L * chunk);
        assertThat(Yardsticks.loopback(4, 1).bytes())
                .as("at least one write per stream")
                .isEqualTo(4L * chunk);
    }

    /** The bound's streams are the loaders' own: their configuration, which the lab keeps. */
    @Test
    void theSocketRateUsesAsManyStreamsAsALoaderOpensPerPeer() throws Exception {
        String yaml =
                Files.readString(
                        Path.of(
                                "..",
                                "loader-service",
                                "src",
                                "main",
                                "resources",
                                "application.yaml"));
        Matcher m = Pattern.compile("(?m)^\\s+streams-per-peer:\\s*(\\d+)\\s*$").matcher(yaml);

        assertThat(m.find()).as("the loader configures its streams per peer").isTrue();
        assertThat(UpdateBench.ENGINE_STREAMS).isEqualTo(Integer.parseInt(m.group(1)));
    }
}
