package io.weightrelay.dataplane;

/**
 * Where one replica of a stored object lives: bytes [offset, offset + size) of a segment.
 *
 * @param segment segment name
 * @param nodeLabel node of the segment's owner, or null if the segment is no longer registered
 * @param offset first byte in the segment
 * @param size object size
 */
public record ObjectLocation(String segment, String nodeLabel, long offset, long size) {}
