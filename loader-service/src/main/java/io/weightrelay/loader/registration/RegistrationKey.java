package io.weightrelay.loader.registration;

import io.weightrelay.dataplane.ForeignBuffer;
import java.util.Objects;

/**
 * What identifies one registration.
 *
 * @param epoch the instance registration epoch it belongs to (a reconnect starts a new one)
 * @param instance the rollout engine instance
 * @param device the worker (or {@code staging} for the loader's own read staging)
 * @param base the registered base: the data-plane segment name
 * @param size registered bytes
 * @param foreign the worker's own Transfer Engine memory the base names, or null for shared memory
 *     of this loader ({@link ReceiveSegmentRegistrar})
 */
public record RegistrationKey(
        long epoch, String instance, String device, String base, long size, ForeignBuffer foreign) {

    /** The registration of shared memory of this loader. */
    public RegistrationKey(long epoch, String instance, String device, String base, long size) {
        this(epoch, instance, device, base, size, null);
    }

    public RegistrationKey {
        Objects.requireNonNull(instance, "instance");
        Objects.requireNonNull(device, "device");
        Objects.requireNonNull(base, "base");
        if (size <= 0) {
            throw new IllegalArgumentException("registration size must be > 0: " + size);
        }
    }

    /** The same registration under {@code epoch}. */
    public RegistrationKey atEpoch(long epoch) {
        return new RegistrationKey(epoch, instance, device, base, size, foreign);
    }

    /** Same instance, device and base: the same memory, possibly of another epoch or size. */
    boolean sameBase(RegistrationKey other) {
        return instance.equals(other.instance)
                && device.equals(other.device)
                && base.equals(other.base);
    }
}
