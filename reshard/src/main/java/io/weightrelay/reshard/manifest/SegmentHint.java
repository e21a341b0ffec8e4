package io.weightrelay.reshard.manifest;

/**
 * Where the store put an object, as a locality hint. Correctness never depends on hints, so they
 * are not part of the manifest digest and the planner does not read them.
 */
public record SegmentHint(String fragment, String segment) {}
