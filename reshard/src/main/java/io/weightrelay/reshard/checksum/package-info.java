/**
 * End-to-end checksums of stored objects: CRC32C with a combine over adjacent parts ({@link
 * Crc32c}), the per-range checksums a loader reports for what it read ({@link RangeChecksums}), and
 * the check that joins every reader's ranges per object and compares them with the checksum the
 * publisher registered ({@link ObjectVerification}). Pure functions, no I/O.
 */
package io.weightrelay.reshard.checksum;
