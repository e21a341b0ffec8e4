package io.weightrelay.dataplane;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * A child JVM that owns segments until told to exit (or killed), for {@link
 * OrphanedSegmentFilesTest}. Args: redisUri keyPrefix segmentName... (each 1 MiB; names starting
 * with {@code recv} are receive segments, the others store segments). Prints {@code READY} and the
 * segments' file paths.
 */
public final class SegmentOwnerMain {
    private SegmentOwnerMain() {}

    public static void main(String[] args) throws Exception {
        DataplaneConfig config = TestEngines.config("owner-node", args[0], args[1]).build();
        try (Dataplane dp = Dataplane.open(config)) {
            List<String> paths = new ArrayList<>();
            for (int i = 2; i < args.length; i++) {
                Segment s =
                        args[i].startsWith("recv")
                                ? dp.createReceiveSegment(args[i], 1 << 20)
                                : dp.createSegment(args[i], 1 << 20);
                paths.add(s.shmPath().toString());
            }
            holdUntilExit(String.join(" ", paths));
        }
    }

    /**
     * Says {@code READY ready}, then answers every command with {@code OK} until {@code exit} (or
     * the end of stdin): what an owner does while its test looks at what it holds.
     */
    static void holdUntilExit(String ready) throws IOException {
        System.out.println("READY " + ready);
        System.out.flush();
        BufferedReader in =
                new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null && !line.trim().equals("exit")) {
            System.out.println("OK");
            System.out.flush();
        }
        System.out.println("OK");
        System.out.flush();
    }
}
