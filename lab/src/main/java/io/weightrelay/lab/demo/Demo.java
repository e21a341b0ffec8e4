package io.weightrelay.lab.demo;

import io.weightrelay.api.loader.client.model.UpdateProgress;
import io.weightrelay.lab.cluster.LabCluster;
import io.weightrelay.lab.rollout.RolloutEngine;
import io.weightrelay.reshard.placement.Mode;
import java.util.List;
import java.util.Locale;

/**
 * {@code ./relay demo [--model M] [--instances I] [--tp P] [--mode compat|direct|both]}: starts a
 * lab (control-api, two publishers on two trainer node labels, one loader per rollout instance on
 * two rollout node labels, all real services in their own JVMs on loopback), then in each mode:
 * publishes a generation, updates every instance, checks every byte; publishes the next one and
 * updates again; kills one instance's loader and brings it back on the active generation with no
 * republish. Narration goes to stderr, one JSON line per mode to stdout. With {@code --hosts} the
 * same story runs on several hosts of this machine instead ({@link HostsDemo}).
 */
public final class Demo {

    private Demo() {}

    public static void main(String[] argv) throws Exception {
        if (java.util.Arrays.asList(argv).contains("--hosts")) {
            HostsDemo.main(argv);
            return;
        }
        String model = flag(argv, "--model", "qwen2.5-0.5b");
        int instances = Integer.parseInt(flag(argv, "--instances", "4"));
        int tp = Integer.parseInt(flag(argv, "--tp", "2"));
        String modes = flag(argv, "--mode", "both");
        List<Mode> run =
                modes.equals("both")
                        ? List.of(Mode.COMPAT, Mode.DIRECT)
                        : List.of(Mode.parse(modes));
        for (Mode mode : run) {
            runMode(LabCluster.Spec.of(model, instances, tp, mode));
        }
    }

    private static void runMode(LabCluster.Spec spec) throws Exception {
        String mode = spec.mode().name().toLowerCase(Locale.ROOT);
        say(
                "%s mode: starting control-api, %d publishers and %d loaders (%s, %d instances x tp %d)",
                mode,
                spec.trainerNodes(),
                spec.instances(),
                spec.model(),
                spec.instances(),
                spec.tp());
        try (LabCluster lab = LabCluster.start(spec)) {
            say("  services up; logs in %s", lab.logs());
            long g1 = lab.publish(0);
            say(
                    "  trainer published generation %d: %d tensors, %d stored objects, one copy each",
                    g1, lab.manifest().tensors().size(), lab.manifest().fragments().size());
            LabCluster.Updates first = lab.updateAll().requireUpdated();
            long verified1 = lab.verifyAll(g1);
            say(
                    "  every instance updated to %d in %.2f s; %d bytes checked against the trainer's",
                    g1, first.seconds(), verified1);

            long g2 = lab.publish(1);
            LabCluster.Updates second = lab.updateAll().requireUpdated();
            long verified2 = lab.verifyAll(g2);
            lab.collectGarbage();
            say(
                    "  generation %d published and applied in %.2f s (%s); generation %d retired",
                    g2, second.seconds(), traffic(second.results()), g1);

            RolloutEngine restarted = lab.restartInstance(0);
            LabCluster.Updates rebuilt = lab.update(List.of(restarted)).requireUpdated();
            long verified3 = lab.verify(restarted, g2);
            say(
                    "  killed %s's loader; the new one loaded active generation %d alone in %.2f s,"
                            + " no republish; %d bytes checked",
                    restarted.instance(), g2, rebuilt.seconds(), verified3);

            System.out.println(
                    String.format(
                            Locale.ROOT,
                            "{\"mode\":\"%s\",\"model\":\"%s\",\"instances\":%d,\"tp\":%d,"
                                    + "\"generations\":[%d,%d],\"update_s\":%.3f,"
                                    + "\"bytes_verified\":%d,\"restart_update_s\":%.3f,"
                                    + "\"restart_bytes_verified\":%d,%s}",
                            mode,
                            spec.model(),
                            spec.instances(),
                            spec.tp(),
                            g1,
                            g2,
                            second.seconds(),
                            verified1 + verified2,
                            rebuilt.seconds(),
                            verified3,
                            trafficJson(second.results())));
        }
    }

    private static String traffic(List<UpdateProgress> results) {
        long[] t = totals(results);
        return String.format(
                Locale.ROOT,
                "store read %.1f MB, pushed %.1f MB over tcp, %.1f MB copied on-node",
                t[0] / 1e6,
                t[1] / 1e6,
                t[2] / 1e6);
    }

    private static String trafficJson(List<UpdateProgress> results) {
        long[] t = totals(results);
        return String.format(
                Locale.ROOT,
                "\"store_read_bytes\":%d,\"tcp_written_bytes\":%d,\"local_written_bytes\":%d",
                t[0],
                t[1],
                t[2]);
    }

    /** Store bytes read, tcp bytes written, local bytes written, over all instances. */
    private static long[] totals(List<UpdateProgress> results) {
        long read = 0;
        long tcp = 0;
        long local = 0;
        for (UpdateProgress p : results) {
            read += p.getTransport().getLocalRead() + p.getTransport().getTcpRead();
            tcp += p.getTransport().getTcpWritten();
            local += p.getTransport().getLocalWritten();
        }
        return new long[] {read, tcp, local};
    }

    private static String flag(String[] argv, String name, String fallback) {
        for (int i = 0; i + 1 < argv.length; i++) {
            if (argv[i].equals(name)) {
                return argv[i + 1];
            }
        }
        return fallback;
    }

    private static void say(String format, Object... args) {
        System.err.println(String.format(Locale.ROOT, format, args));
    }
}
