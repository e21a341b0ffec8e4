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
}
