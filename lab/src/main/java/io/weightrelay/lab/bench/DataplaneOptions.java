package io.weightrelay.lab.bench;

import io.weightrelay.dataplane.DataplaneEngine;

/**
 * {@code ./relay bench dataplane}'s flags, as its {@code --help} describes them: where the two ends
 * run and which engine moves the bytes pick the figures; the rest shape every variant alike.
 *
 * @param size bytes per transfer
 * @param repeats measured rounds per figure; the median is reported
 * @param redis the Redis the data planes' directory lives in, on this machine (the hosts run one of
 *     their own)
 * @param streams tcp streams per peer of the built-in engine, and the plain socket's with it
 *     (Mooncake's tcp transport moves a request over one connection: its socket gets one)
 * @param prefix the prefix of the namespaces and links {@code hosts} makes
 * @param hosts the two ends on two hosts of this machine (network namespaces), not in this JVM
 * @param engine the engine measured against the yardsticks
 */
public record DataplaneOptions(
        long size,
        int repeats,
        String redis,
        int streams,
        String prefix,
        boolean hosts,
        DataplaneEngine engine) {}
