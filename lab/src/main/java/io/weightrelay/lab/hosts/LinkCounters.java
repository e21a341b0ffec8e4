package io.weightrelay.lab.hosts;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * What crossed each host's two interfaces, read from the kernel's counters of the bridge ports (the
 * veth ends in the lab's network namespace), seen from the host: what a host sent is what its
 * bridge port received. {@link #minus(LinkCounters)} turns two snapshots into the traffic between
 * them.
 *
 * @param hosts host name to its counters, in the lab's host order
 */
public record LinkCounters(Map<String, HostLinks> hosts) {

    /**
     * Bytes on the wire of one direction of one interface that are not TCP payload, per frame:
     * Ethernet (14), IPv4 (20), TCP (20) and the timestamp option Linux sends on every segment of a
     * connection (12). A veth counts a GSO super-frame once, with its headers once, so {@code bytes
     * - packets * 66} is the TCP payload exactly for data and ACK frames; SYNs carry 8 more option
     * bytes and ARP frames 24 fewer, a few dozen bytes per connection in all.
     */
    public static final int FRAME_HEADER_BYTES = 14 + 20 + 20 + 12;

    /** Bytes and frames one way through one interface. */
    public record Traffic(long bytes, long packets) {
        public Traffic minus(Traffic earlier) {
            return new Traffic(bytes - earlier.bytes, packets - earlier.packets);
        }

        public Traffic plus(Traffic other) {
            return new Traffic(bytes + other.bytes, packets + other.packets);
        }

        /** The TCP payload these frames carried (see {@link #FRAME_HEADER_BYTES}). */
        public long tcpPayload() {
            return bytes - packets * FRAME_HEADER_BYTES;
        }
    }

    /** One host's data-plane and control interfaces, each way. */
    public record HostLinks(
            Traffic dataSent, Traffic dataReceived, Traffic controlSent, Traffic controlReceived) {
        HostLinks minus(HostLinks earlier) {
            return new HostLinks(
                    dataSent.minus(earlier.dataSent),
                    dataReceived.minus(earlier.dataReceived),
                    controlSent.minus(earlier.controlSent),
                    controlReceived.minus(earlier.controlReceived));
        }
    }

    public LinkCounters {
        hosts = java.util.Collections.unmodifiableMap(new LinkedHashMap<>(hosts));
    }

    /** The traffic between {@code earlier} and this snapshot. */
    public LinkCounters minus(LinkCounters earlier) {
        Map<String, HostLinks> out = new LinkedHashMap<>();
        hosts.forEach((h, links) -> out.put(h, links.minus(earlier.hosts.get(h))));
        return new LinkCounters(out);
    }

    /** Everything every host sent into the data-plane network (each byte counted once). */
    public Traffic dataSent() {
        Traffic t = new Traffic(0, 0);
        for (HostLinks l : hosts.values()) {
            t = t.plus(l.dataSent());
        }
        return t;
    }

    /** Everything every host sent into the control network (REST and Redis). */
    public Traffic controlSent() {
        Traffic t = new Traffic(0, 0);
        for (HostLinks l : hosts.values()) {
            t = t.plus(l.controlSent());
        }
        return t;
    }
}
