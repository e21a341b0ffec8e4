package io.weightrelay.lab.bench;

import io.weightrelay.lab.cluster.LabCluster;
import io.weightrelay.lab.cluster.LabUpdate;

/**
 * {@code first_weights_s} of {@code bench update}: how long a restarted engine waits for its first
 * weights, from its registration (a new epoch: it declares the same receive buffers as before, so
 * its loader keeps their segments under a new incarnation and keeps its read staging, rather than
 * making and pre-faulting them as for an engine that starts, which {@code buffer_setup_s} measures)
 * to the update that brings it the next generation reaching every engine. The trainer's publish of
 * that generation comes before and is not counted: an engine that joins a running deployment finds
 * a generation published.
 *
 * @param setupSeconds the registration, buffers included
 * @param updateSeconds the update round that follows it
 * @param bytesVerified bytes of the restarted engine checked against the trainer's (0 when not
 *     checked)
 */
record FirstWeights(double setupSeconds, double updateSeconds, long bytesVerified) {

    /** Registration to holding the first weights. */
    double seconds() {
        return setupSeconds + updateSeconds;
    }

    /**
     * Publishes {@code step} (not timed), registers engine {@code index} of {@code lab} again and
     * updates every engine to the new generation, which must reach them all; with {@code verify},
     * every byte of the restarted engine is then checked.
     */
    static FirstWeights ofRestartedEngine(LabCluster lab, long step, int index, boolean verify)
            throws Exception {
        long generation = lab.publish(step);
        long started = System.nanoTime();
        lab.reRegister(index);
        double setup = (System.nanoTime() - started) / 1e9;
        LabUpdate update = lab.updateAll().requireUpdated();
        long verified = verify ? lab.verify(lab.engines().get(index), generation) : 0;
        lab.collectGarbage();
        return new FirstWeights(setup, update.seconds(), verified);
    }
}
