package io.weightrelay.lab.bench;

/**
 * {@code ./relay bench dataplane}'s flags, as its {@code --help} describes them: each of its three
 * benches (native-dataplane's on this host, {@link HostsDataplaneBench} between two hosts, {@link
 * MooncakeDataplaneBench} on Mooncake) reads the ones it uses.
 */
public record DataplaneOptions(long size, int repeats, String redis, int streams, String prefix) {}
