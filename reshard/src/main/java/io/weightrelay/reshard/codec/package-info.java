/**
 * Canonical binary encoding (big-endian fixed-width integers, unsigned LEB128 varints,
 * length-prefixed UTF-8 strings) and SHA-256 digests over it. Every contract and the plan use this
 * one encoding, so equal values always give equal bytes and equal digests.
 */
package io.weightrelay.reshard.codec;
