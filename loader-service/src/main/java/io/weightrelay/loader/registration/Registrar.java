package io.weightrelay.loader.registration;

/**
 * Performs the registrations the {@link RegistrationManager} decides on.
 *
 * @param <H> the handle of one registration (for the data plane, the segment)
 */
public interface Registrar<H> {

    /** Registers the memory the key names; throws when it cannot. */
    H register(RegistrationKey key);

    /** Unregisters exactly what {@link #register} returned for this key. */
    void unregister(RegistrationKey key, H handle);

    /**
     * Keeps the registration {@code handle} of {@code from} as the registration of {@code to}: the
     * same memory (same device, base and size) registered again under a new epoch, which must be
     * fenced from what was addressed to {@code from} as a new registration would be. Returns false
     * when it cannot (the manager then unregisters it and registers {@code to} anew); the default
     * never can.
     */
    default boolean renew(RegistrationKey from, RegistrationKey to, H handle) {
        return false;
    }
}
