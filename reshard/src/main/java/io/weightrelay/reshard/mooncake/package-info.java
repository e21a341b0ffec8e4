/**
 * Mooncake's weight contracts (its PR #3187, {@code mooncake.reshard.weight}) spoken at our edges:
 * a committed generation written as a #3187 {@code WeightManifest} ({@link WeightManifestExport}).
 * Our own contracts stay ours; these are translations, refused with the #3187 field and value when
 * the other side cannot say what we hold.
 */
package io.weightrelay.reshard.mooncake;
