/**
 * Several "hosts" on one machine, for the multi-host lab ({@code ./relay demo --hosts}): each host
 * is a network namespace with an address on a control network and one on a data-plane network (two
 * bridges in a namespace of their own, addresses from 198.18.0.0/15, nothing added to the machine's
 * own namespace) and a private {@code /dev/shm} (a mount namespace with its own tmpfs). {@link
 * io.weightrelay.lab.hosts.HostLab} makes and removes them, {@link io.weightrelay.lab.hosts.Host}
 * runs processes inside one, {@link io.weightrelay.lab.hosts.LinkCounters} reads what crossed the
 * interfaces and {@link io.weightrelay.lab.hosts.ShmIsolation} proves that no process maps another
 * host's shared memory. Needs root.
 */
package io.weightrelay.lab.hosts;
