package io.weightrelay.lab.bench;

import io.weightrelay.dataplane.DataplaneEngine;
import io.weightrelay.lab.cluster.MooncakeServices;
import io.weightrelay.lab.hosts.HostLab;
import io.weightrelay.lab.hosts.HostLabException;

/**
 * {@code ./relay bench dataplane}: one program for every data-plane benchmark. The flags pick where
 * the two ends of a transfer run ({@link DataplaneOptions#hosts}: in this JVM, or on two hosts of
 * this machine) and which engine moves the bytes ({@link DataplaneOptions#engine}); every variant
 * measures its engine against the same plain yardsticks (one thread's native {@code memcpy} of the
 * same bytes, {@code memcpy_gbps}, and a plain socket copy between the same two ends with the
 * engine's streams, {@code socket_gbps}) on the same memory, in the same rounds of one loop ({@link
 * DataplaneRounds}), and prints one JSON line:
 *
 * <ul>
 *   <li>{@link BuiltinOnOneHost}: the built-in engine's local and tcp transports against {@code
 *       memcpy} and a loopback socket, and the Store's put and ranged gets
 *   <li>{@link BuiltinOnHosts}: its authenticated tcp transport between two hosts against a plain
 *       socket between the same two, and an intruder refused
 *   <li>{@link MooncakeOnOneHost}: Mooncake's Transfer Engine and Store against a loopback socket
 * </ul>
 *
 * Each line carries a check; the exit code is 1 when it failed, 3 when this machine cannot run the
 * variant (not root, no Mooncake master).
 */
public final class DataplaneBench {

    private DataplaneBench() {}

    /**
     * A variant's JSON line and whether its check held.
     *
     * @param json the line, every figure of the variant
     * @param passed the variant's check: the peers authenticated (with --hosts: an intruder
     *     refused; on one machine: and a put into the own segment moved no byte over tcp), or a
     *     Mooncake write landed byte-exact
     */
    public record Line(String json, boolean passed) {}

    /** {@code ./relay bench dataplane}: prints the JSON line; exit 1 if its check failed. */
    public static void run(DataplaneOptions options) throws Exception {
        Line line;
        try {
            if (options.hosts()) {
                HostLab.requireRoot();
            }
        } catch (HostLabException e) {
            cannotRun(" --hosts: ", e);
        }
        try {
            line = line(options);
        } catch (MooncakeServices.StartException e) {
            cannotRun(": ", e);
            return;
        }
        System.out.println(line.json());
        if (!line.passed()) {
            System.exit(1);
        }
    }

    private static void cannotRun(String where, Exception e) {
        System.err.println("relay bench dataplane" + where + e.getMessage());
        System.exit(3);
    }

    /** Runs the variant {@code options} pick and returns its line. */
    public static Line line(DataplaneOptions options) throws Exception {
        if (options.hosts()) {
            return BuiltinOnHosts.line(options);
        }
        return options.engine() == DataplaneEngine.MOONCAKE
                ? MooncakeOnOneHost.line(options)
                : BuiltinOnOneHost.line(options);
    }
}
