package io.weightrelay.control.redis;

import io.weightrelay.reshard.manifest.GenerationId;
import io.weightrelay.reshard.manifest.SessionKey;
import org.springframework.stereotype.Component;

/**
 * The key layout, in one place. Lua scripts build per-generation keys from the same prefix (see
 * {@code scripts/*.lua}), so the layout below is the contract between Java and Lua. Control-api
 * expects a single Redis node, not a Cluster: scripts touch keys they derive themselves.
 */
@Component
public final class RedisKeys {

    private final String prefix;

    public RedisKeys(RedisKeyProperties properties) {
        this.prefix = properties.keyPrefix();
    }

    public String prefix() {
        return prefix;
    }

    /** String: a random mark made when absent; a change or absence means Redis lost its data. */
    public String incarnation() {
        return prefix + "incarnation";
    }

    /**
     * String: the Redis server time (ms) of the last tick of any control-api instance ({@code
     * tick.lua}).
     */
    public String lastTick() {
        return prefix + "cp:lastTick";
    }

    /**
     * Hash {@code from}, {@code until} (ms): the last window in which no control-api instance
     * ticked ({@code tick.lua}); registrations that expired within it get one TTL of grace.
     */
    public String outage() {
        return prefix + "cp:outage";
    }

    /** Set of every model that ever opened a generation. */
    public String models() {
        return prefix + "models";
    }

    /** Sorted set of a model's generation ids (score = id). */
    public String generations(String model) {
        return prefix + "model:" + model + ":gens";
    }

    /** Counter handing out a model's generation ids. */
    public String sequence(String model) {
        return prefix + "model:" + model + ":seq";
    }

    /** Hash trainer step to generation id: opening is idempotent by step. */
    public String steps(String model) {
        return prefix + "model:" + model + ":steps";
    }

    /** The active generation id of a model. */
    public String active(String model) {
        return prefix + "model:" + model + ":active";
    }

    /** Hash of one generation. */
    public String generation(GenerationId id) {
        return keyOf("gen", id);
    }

    /** Hash fragment id to {@code size|checksum|segments} of a generation's registered objects. */
    public String objects(GenerationId id) {
        return keyOf("gen-objects", id);
    }

    /** Sorted set holder to lease expiry (epoch ms) of a generation. */
    public String leases(GenerationId id) {
        return keyOf("gen-leases", id);
    }

    /** JSON of a source manifest, content-addressed by its digest. */
    public String manifest(String model, String digest) {
        return prefix + "manifest:" + model + ":" + digest;
    }

    /** Deflated reshard binary encoding of a source manifest, by its digest. */
    public String manifestEncoded(String model, String digest) {
        return prefix + "manifest-encoded:" + model + ":" + digest;
    }

    /** Hash fragment id to expected size of a manifest. */
    public String manifestSizes(String model, String digest) {
        return prefix + "manifest-sizes:" + model + ":" + digest;
    }

    /** JSON of a publisher assignment, by (manifest digest, trainer topology digest). */
    public String assignment(String manifestDigest, String topologyDigest) {
        return prefix + "assignment:" + manifestDigest + ":" + topologyDigest;
    }

    /** Sorted set segment name to heartbeat expiry (epoch ms). */
    public String segments() {
        return prefix + "segments";
    }

    public String segment(String segment) {
        return prefix + "segment:" + segment;
    }

    /** Sorted set loader instance to heartbeat expiry (epoch ms). */
    public String loaders() {
        return prefix + "loaders";
    }

    public String loader(String instance) {
        return prefix + "loader:" + instance;
    }

    /** A fragment template's {@code wr.fragments.v1} bytes, by digest (shared by every worker). */
    public String placement(String digest) {
        return prefix + "placement:" + digest;
    }

    /** JSON summary of a computed plan; written last, so its presence means the plan is whole. */
    public String planSummary(String planId) {
        return prefix + "plan:" + planId;
    }

    /** Deflated reshard encoding of a whole plan. */
    public String planEncoded(String planId) {
        return prefix + "plan-encoded:" + planId;
    }

    /** Deflated reshard encoding of one loader's slice. */
    public String planSlice(String planId, String instance) {
        return prefix + "plan-slice:" + planId + ":" + instance;
    }

    /**
     * Deflated reshard encoding of the ranges a plan reads, by object and reader ({@code
     * ObjectVerification.encodeExpected}): what the all-applied barrier checks reports against.
     */
    public String planExpected(String planId) {
        return prefix + "plan-expected:" + planId;
    }

    /** JSON of a plan's bytes per NIC and per instance (reshard's {@code PlanLoads}). */
    public String planLoad(String planId) {
        return prefix + "plan-load:" + planId;
    }

    /** Who computes a plan right now (SET NX PX). */
    public String planLock(String planId) {
        return prefix + "plan-lock:" + planId;
    }

    /** Counter every loader registration takes its epoch from (epochs are unique). */
    public String loaderEpochs() {
        return prefix + "loader-epoch";
    }

    /** Hash instance to the range checksums (base64 {@code wr.crc.v1}) it reported applied. */
    public String sessionChecksums(SessionKey session) {
        return keyOf("update-checksums", session);
    }

    /**
     * Hash {@code <destination>><sender>} to the digests (base64 {@code wr.landed.v1}) of what the
     * sender's SENT report says it wrote into the destination instance's buffers.
     */
    public String sessionSent(SessionKey session) {
        return keyOf("update-sent", session);
    }

    /**
     * Sorted set of a model's update sessions ({@code {generation}:{group}}) by start time: an
     * index for operators, trimmed on start and pruned of sessions that expired when read.
     */
    public String sessions(String model) {
        return prefix + "updates:" + model;
    }

    /** Hash of an update session. */
    public String session(SessionKey session) {
        return keyOf("update", session);
    }

    /** Hash instance to participant JSON of an update session. */
    public String participants(SessionKey session) {
        return keyOf("update-participants", session);
    }

    /** Hash of the last checkpoint of a generation. */
    public String checkpoint(GenerationId id) {
        return keyOf("checkpoint", id);
    }

    /** Channel announcing a newly active generation of a model (message: the id). */
    public String activeChannel(String model) {
        return prefix + "events:active:" + model;
    }

    /** Channel announcing any change of an update session. */
    public String sessionChannel(SessionKey session) {
        return keyOf("events:update", session);
    }

    /** Pattern matching every channel above. */
    public String eventPattern() {
        return prefix + "events:*";
    }

    /** {@code <prefix><kind>:<model>:<generation>}, the layout the Lua scripts build too. */
    private String keyOf(String kind, GenerationId id) {
        return prefix + kind + ":" + id.model() + ":" + id.generation();
    }

    /** {@code <prefix><kind>:<model>:<generation>:<group>}. */
    private String keyOf(String kind, SessionKey session) {
        return keyOf(kind, session.generationId()) + ":" + session.group();
    }
}
