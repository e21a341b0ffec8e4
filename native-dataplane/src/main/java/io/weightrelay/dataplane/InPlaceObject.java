package io.weightrelay.dataplane;

/**
 * An object whose bytes already sit in a reserved block of an own segment: {@code size} bytes at
 * {@code offset} of the segment, to be published under {@code key} without a copy (see {@link
 * StoreClient#publishInPlace}).
 */
public record InPlaceObject(String key, long offset, long size) {}
