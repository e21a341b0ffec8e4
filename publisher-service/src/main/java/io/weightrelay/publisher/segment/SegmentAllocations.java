package io.weightrelay.publisher.segment;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Where this publisher's own objects lie in its segment, per generation: the allocation (offset and
 * size) of each object it stored there, and the incarnation mark of control-api's Redis under which
 * control-api last knew the generation. The segment's allocator knows only offsets, and the store's
 * directory lives in Redis: when Redis loses its data, this is the only record of which allocations
 * held the generations nobody knows any more ({@link ForgottenGenerations} frees them).
 *
 * <p>Also counts the allocations made and not yet recorded or freed (a staging reservation, an
 * output block, a put under way): while one exists, nothing is freed, since its offset may be one a
 * collected generation had. Thread safe (this object's monitor, which {@link #settle} holds while
 * it frees, so no allocation starts meanwhile).
 */
final class SegmentAllocations {

    /** One object's allocation in the segment. */
    record Allocation(String key, long offset, long size) {}

    /** Frees allocations control-api's lost Redis forgot; returns the bytes freed. */
    @FunctionalInterface
    interface Freer {
        long free(List<Allocation> forgotten);
    }

    private static final class Tracked {
        final Map<String, Allocation> byKey = new HashMap<>();

        /** The mark under which control-api last knew the generation; null: never heard. */
        String mark;

        Tracked(String mark) {
            this.mark = mark;
        }
    }

    /** {@code model/generation} -> its objects in this segment. */
    private final Map<String, Tracked> generations = new HashMap<>();

    /**
     * Allocations whose key was stored again at another offset (a generation id used again after
     * Redis lost its data, or a restore): the directory entry they had is gone; with the mark of
     * their generation then.
     */
    private final List<Tracked> superseded = new ArrayList<>();

    private int untracked;
    private String mark;

    /** An allocation starts that is recorded ({@link #record}) or freed later. */
    synchronized void beginUntracked() {
        untracked++;
    }

    /** An allocation begun with {@link #beginUntracked} was recorded or freed. */
    synchronized void endUntracked() {
        untracked--;
    }

    /** Records stored objects, then ends the untracked allocation they came from. */
    synchronized void recordAndEnd(List<Allocation> stored) {
        try {
            stored.forEach(this::record);
        } finally {
            untracked--;
        }
    }

    private void record(Allocation a) {
        Tracked t =
                generations.computeIfAbsent(
                        SegmentOwner.generationOf(a.key()), g -> new Tracked(mark));
        Allocation before = t.byKey.put(a.key(), a);
        if (before != null && before.offset() != a.offset()) {
            Tracked old = new Tracked(t.mark);
            old.byKey.put(before.key(), before);
            superseded.add(old);
        }
    }

    /** The object was removed from the store (its allocation freed with it). */
    synchronized void forget(String key) {
        Tracked t = generations.get(SegmentOwner.generationOf(key));
        if (t != null) {
            t.byKey.remove(key);
            if (t.byKey.isEmpty()) {
                generations.remove(SegmentOwner.generationOf(key));
            }
        }
    }

    /** The {@code model/generation} of every generation with objects recorded. */
    synchronized Set<String> generations() {
        return new HashSet<>(generations.keySet());
    }

    /**
     * Applies what control-api answered in one heartbeat. {@code known}: per generation asked,
     * whether control-api knows it; {@code before}: the mark of the previous heartbeat (null if
     * none), {@code now}: the mark read fresh after the questions were answered.
     *
     * <ul>
     *   <li>Known, and the mark did not change since the previous heartbeat: the generation is
     *       known under {@code now}. (Changed: it may be a new generation under a reused id; left
     *       as it was until the next heartbeat.)
     *   <li>Unknown, under the mark it was last known under (or never heard of): collected (or
     *       aborted) normally, which freed its objects; the record is dropped.
     *   <li>Unknown, last known under another mark: Redis lost it, and with it the directory
     *       entries by which anybody else could free its objects. Its allocations are freed by
     *       {@code freer}, except those another record holds (the offset was reused), and not while
     *       an untracked allocation exists (then next time).
     * </ul>
     *
     * @return the bytes freed
     */
    synchronized long settle(Map<String, Boolean> known, String before, String now, Freer freer) {
        mark = now;
        List<Tracked> lost = new ArrayList<>();
        for (Map.Entry<String, Boolean> e : known.entrySet()) {
            Tracked t = generations.get(e.getKey());
            if (t == null) {
                continue;
            }
            if (e.getValue()) {
                if (now.equals(before)) {
                    t.mark = now;
                }
            } else if (t.mark == null || t.mark.equals(now)) {
                generations.remove(e.getKey());
            } else {
                lost.add(t);
            }
        }
        superseded.removeIf(t -> t.mark == null || t.mark.equals(now));
        lost.addAll(superseded);
        if (lost.isEmpty() || untracked > 0) {
            return 0;
        }
        Set<Long> held = new HashSet<>();
        for (Tracked t : generations.values()) {
            if (!lost.contains(t)) {
                t.byKey.values().forEach(a -> held.add(a.offset()));
            }
        }
        List<Allocation> forgotten = new ArrayList<>();
        for (Tracked t : lost) {
            for (Allocation a : t.byKey.values()) {
                if (held.add(a.offset())) {
                    forgotten.add(a);
                }
            }
        }
        // Dropped before freeing: a free that fails half way must not be tried again later, when
        // allocations made since may have reused the offsets it did free.
        generations.values().removeIf(lost::contains);
        superseded.clear();
        return freer.free(forgotten);
    }

    /**
     * For a control-api that sends no mark: drops the records of the generations it no longer knows
     * (without a mark a loss cannot be told from a collection, so nothing is freed), so that the
     * records do not grow with every generation published.
     */
    synchronized void forgetUnknown(Map<String, Boolean> known) {
        known.forEach(
                (g, isKnown) -> {
                    if (!isKnown) {
                        generations.remove(g);
                    }
                });
        superseded.clear();
    }

    /** The mark of the last heartbeat, which new records start with. */
    synchronized void seen(String now) {
        mark = now;
    }
}
