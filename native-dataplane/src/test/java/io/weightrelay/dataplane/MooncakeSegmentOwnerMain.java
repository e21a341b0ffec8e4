package io.weightrelay.dataplane;

import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;

/**
 * A child JVM whose Mooncake data plane owns one receive segment (1 MiB) until told to exit or
 * killed, for {@link MooncakeEngineOnlyTest}. Args: redisUri keyPrefix workDir segmentName and then
 * the command prefix that runs its agent in the master's namespace. Prints {@code READY} and the
 * segment file's path.
 */
public final class MooncakeSegmentOwnerMain {
    private MooncakeSegmentOwnerMain() {}

    public static void main(String[] args) throws Exception {
        MooncakeConfig mooncake =
                new MooncakeConfig(
                        MooncakeMaster.VENV.resolve("bin/python"),
                        MooncakeMaster.PYTHON_SRC,
                        Arrays.asList(args).subList(4, args.length),
                        MooncakeMaster.RPC,
                        "127.0.0.1",
                        16L << 20,
                        "tcp",
                        MooncakeConfig.P2P_HANDSHAKE,
                        Path.of(args[2]),
                        Duration.ofSeconds(60),
                        Duration.ofSeconds(60),
                        Duration.ofSeconds(10));
        DataplaneConfig config =
                TestEngines.config("owner-node", args[0], args[1])
                        .engine(DataplaneEngine.MOONCAKE)
                        .mooncake(mooncake)
                        .build();
        try (Dataplane dp = Dataplane.open(config)) {
            Segment s = dp.createReceiveSegment(args[3], 1 << 20);
            SegmentOwnerMain.holdUntilExit(s.shmPath().toString());
        }
    }
}
