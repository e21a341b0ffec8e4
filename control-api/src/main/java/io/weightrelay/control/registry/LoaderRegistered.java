package io.weightrelay.control.registry;

/**
 * Published (as a Spring application event, on the registering thread) once a loader registered, or
 * registered again with a new epoch or new buffers: what depends on a rollout group's members (its
 * plan) can be made ready before the group's next prepare asks for it.
 */
public record LoaderRegistered(String model, String group, String instance) {}
