package io.weightrelay.loader.registration;

/** Life cycle of one registration. */
public enum RegistrationState {
    /** Registered for an update that has not passed the all-prepared barrier yet. */
    PROVISIONAL,
    /** Kept across generations until the key changes, a reconnect or teardown. */
    PERSISTENT
}
