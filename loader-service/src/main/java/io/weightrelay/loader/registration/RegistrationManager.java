package io.weightrelay.loader.registration;

import java.util.ArrayList;
import java.util.Collection;
import java.util.HashSet;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Predicate;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Decides which registrations exist. An update {@linkplain #acquire acquires} every key it needs: a
 * key already registered (persistent from an earlier generation, or provisional) is reused, a new
 * one is registered provisionally. After the all-prepared barrier the update {@linkplain #promote
 * promotes} them; a failed prepare {@linkplain #discardProvisional discards} them. A key whose base
 * is registered with another size or epoch replaces it (allocation change).
 *
 * <p>Thread safe: every method is synchronized; registrar calls run under the lock, so a concurrent
 * teardown never races a registration of the same base.
 *
 * @param <H> the handle type of the {@link Registrar}
 */
public final class RegistrationManager<H> {
    private static final Logger log = LoggerFactory.getLogger(RegistrationManager.class);

    private final Registrar<H> registrar;
    private final Map<RegistrationKey, Entry<H>> entries = new LinkedHashMap<>();
    private long registered;
    private long reused;
    private long unregistered;

    private static final class Entry<H> {
        final H handle;
        RegistrationState state = RegistrationState.PROVISIONAL;

        Entry(H handle) {
            this.handle = handle;
        }
    }

    /** One registration as it stands. */
    public record Snapshot(RegistrationKey key, RegistrationState state) {}

    /** Totals since start. */
    public record Stats(long registered, long reused, long unregistered, int live) {}

    public RegistrationManager(Registrar<H> registrar) {
        this.registrar = registrar;
    }

    /** The handle for the key: reused when registered, otherwise registered provisionally. */
    public synchronized H acquire(RegistrationKey key) {
        Entry<H> existing = entries.get(key);
        if (existing != null) {
            reused++;
            return existing.handle;
        }
        removeIf(k -> k.sameBase(key));
        H handle = registrar.register(key);
        entries.put(key, new Entry<>(handle));
        registered++;
        return handle;
    }

    /**
     * The handle for the key, registered persistent: memory the instance registered with its engine
     * (its receive buffers), created and pre-faulted when the engine registers rather than inside
     * its first update. Reuses (and keeps) a registration of the same key; a failed prepare never
     * discards it.
     */
    public synchronized H acquirePersistent(RegistrationKey key) {
        H handle = acquire(key);
        entries.get(key).state = RegistrationState.PERSISTENT;
        return handle;
    }

    /**
     * A handle of at least {@code key.size()} bytes: a registration of the same base and epoch that
     * is at least that large is reused as it is (with its state), otherwise the key is {@linkplain
     * #acquire acquired}, replacing a smaller one. For memory sized ahead of need, as the read
     * staging created at registration: a plan that needs less uses it, one that needs more grows
     * it.
     */
    public synchronized H acquireAtLeast(RegistrationKey key) {
        for (Map.Entry<RegistrationKey, Entry<H>> e : entries.entrySet()) {
            RegistrationKey k = e.getKey();
            if (k.sameBase(key) && k.epoch() == key.epoch() && k.size() >= key.size()) {
                reused++;
                return e.getValue().handle;
            }
        }
        return acquire(key);
    }

    /** The handle of a registered key, or null. */
    public synchronized H find(RegistrationKey key) {
        Entry<H> e = entries.get(key);
        return e == null ? null : e.handle;
    }

    /** Makes every provisional registration persistent; returns how many were promoted. */
    public synchronized int promote() {
        int promoted = 0;
        for (Entry<H> e : entries.values()) {
            if (e.state == RegistrationState.PROVISIONAL) {
                e.state = RegistrationState.PERSISTENT;
                promoted++;
            }
        }
        return promoted;
    }

    /**
     * Unregisters the registration of {@code handle}, whatever its state: memory a transfer may
     * still be moving bytes into (an abandoned apply that did not drain) is given up rather than
     * used again. Returns how many registrations went (0 or 1).
     */
    public synchronized int discard(H handle) {
        List<RegistrationKey> gone = new ArrayList<>();
        for (Map.Entry<RegistrationKey, Entry<H>> e : entries.entrySet()) {
            if (e.getValue().handle == handle) {
                gone.add(e.getKey());
            }
        }
        return removeIf(gone::contains);
    }

    /** Unregisters every provisional registration (a failed prepare leaves nothing behind). */
    public synchronized int discardProvisional() {
        List<RegistrationKey> gone = new ArrayList<>();
        for (Map.Entry<RegistrationKey, Entry<H>> e : entries.entrySet()) {
            if (e.getValue().state == RegistrationState.PROVISIONAL) {
                gone.add(e.getKey());
            }
        }
        return removeIf(gone::contains);
    }

    /**
     * A reconnect: unregisters the instance's registrations of every epoch before {@code epoch}.
     */
    public synchronized int invalidateBefore(String instance, long epoch) {
        return removeIf(k -> k.instance().equals(instance) && k.epoch() < epoch);
    }

    /**
     * A registration at {@code epoch}: unregisters the instance's registrations of every other
     * epoch. Unlike {@link #invalidateBefore} it also drops those of a greater epoch, which exist
     * when control-api's epoch counter started again (Redis lost its data).
     */
    public synchronized int invalidateExcept(String instance, long epoch) {
        return removeIf(k -> k.instance().equals(instance) && k.epoch() != epoch);
    }

    /**
     * The same instance registered again at {@code epoch} because control-api forgot it (Redis lost
     * its data): its memory did not change, so every registration it has stays registered, with its
     * handle and state, under the new epoch. Nothing is unregistered: the engine keeps the bytes it
     * holds mapped and findable, and the next update reuses them instead of registering them anew.
     *
     * @return how many registrations moved to {@code epoch}
     */
    public synchronized int carryOver(String instance, long epoch) {
        return carryOver(instance, epoch, k -> true);
    }

    /**
     * The same instance registered again at {@code epoch} (its engine restarted): only the
     * registrations of {@code device} move to the new epoch, with their handles and states, before
     * the others are {@linkplain #invalidateExcept invalidated}. For the loader's own read staging
     * ({@code staging}), which is the loader's memory, not the engine's: a restarted engine brings
     * new receive buffers, but the staging it had is reused instead of made and pre-faulted again.
     *
     * @return how many registrations moved to {@code epoch}
     */
    public synchronized int carryOverDevice(String instance, String device, long epoch) {
        return carryOver(instance, epoch, k -> k.device().equals(device));
    }

    /**
     * The same instance registered again at {@code epoch} (its engine restarted) and declared the
     * registrations {@code declared}: each of its registrations of another epoch that is declared
     * again (same device, base and size) is {@linkplain Registrar#renew renewed} and moves to
     * {@code epoch} with its handle and state, instead of being unregistered and registered anew
     * (for receive segments: a new file whose pages the kernel clears on first touch, seconds per
     * GiB on a VM that handed freed pages back to its host). What the registrar cannot renew, or is
     * not declared again, stays under its epoch for {@link #invalidateExcept}.
     *
     * @return how many registrations were renewed
     */
    public synchronized int renew(
            String instance, long epoch, Collection<RegistrationKey> declared) {
        Set<RegistrationKey> wanted = new HashSet<>(declared);
        List<RegistrationKey> candidates = new ArrayList<>();
        for (RegistrationKey k : entries.keySet()) {
            if (k.instance().equals(instance) && k.epoch() != epoch) {
                RegistrationKey to = k.atEpoch(epoch);
                if (wanted.contains(to) && !entries.containsKey(to)) {
                    candidates.add(k);
                }
            }
        }
        int renewed = 0;
        for (RegistrationKey from : candidates) {
            RegistrationKey to = from.atEpoch(epoch);
            Entry<H> entry = entries.get(from);
            boolean kept;
            try {
                kept = !entries.containsKey(to) && registrar.renew(from, to, entry.handle);
            } catch (RuntimeException e) {
                log.warn("renewing {} failed, it is registered anew: {}", from, e.toString());
                kept = false;
            }
            if (kept) {
                entries.remove(from);
                entries.put(to, entry);
                renewed++;
            }
        }
        return renewed;
    }

    private int carryOver(String instance, long epoch, Predicate<RegistrationKey> which) {
        Map<RegistrationKey, Entry<H>> moved = new LinkedHashMap<>();
        Iterator<Map.Entry<RegistrationKey, Entry<H>>> it = entries.entrySet().iterator();
        while (it.hasNext()) {
            Map.Entry<RegistrationKey, Entry<H>> e = it.next();
            RegistrationKey k = e.getKey();
            if (k.instance().equals(instance) && k.epoch() != epoch && which.test(k)) {
                it.remove();
                moved.put(k.atEpoch(epoch), e.getValue());
            }
        }
        // Two epochs' entries for the same memory would collide on the new key: keep one handle,
        // unregister the other (it cannot happen when every registration went through acquire,
        // which replaces a base registered under another epoch).
        for (Map.Entry<RegistrationKey, Entry<H>> e : moved.entrySet()) {
            Entry<H> clash = entries.put(e.getKey(), e.getValue());
            if (clash != null && clash.handle != e.getValue().handle) {
                unregistered++;
                registrar.unregister(e.getKey(), clash.handle);
            }
        }
        return moved.size();
    }

    /**
     * Teardown: unregisters exactly the bases registered for the instance.
     *
     * @return the keys unregistered
     */
    public synchronized List<RegistrationKey> unregisterInstance(String instance) {
        List<RegistrationKey> keys = new ArrayList<>();
        for (RegistrationKey k : entries.keySet()) {
            if (k.instance().equals(instance)) {
                keys.add(k);
            }
        }
        removeIf(keys::contains);
        return keys;
    }

    public synchronized List<Snapshot> snapshot() {
        List<Snapshot> out = new ArrayList<>(entries.size());
        entries.forEach((k, e) -> out.add(new Snapshot(k, e.state)));
        return out;
    }

    public synchronized Stats stats() {
        return new Stats(registered, reused, unregistered, entries.size());
    }

    private int removeIf(Predicate<RegistrationKey> doomed) {
        int removed = 0;
        RuntimeException first = null;
        Iterator<Map.Entry<RegistrationKey, Entry<H>>> it = entries.entrySet().iterator();
        while (it.hasNext()) {
            Map.Entry<RegistrationKey, Entry<H>> e = it.next();
            if (!doomed.test(e.getKey())) {
                continue;
            }
            it.remove();
            removed++;
            unregistered++;
            try {
                registrar.unregister(e.getKey(), e.getValue().handle);
            } catch (RuntimeException ex) {
                log.warn("unregistering {} failed: {}", e.getKey(), ex.toString());
                if (first == null) {
                    first = ex;
                }
            }
        }
        if (first != null) {
            throw first;
        }
        return removed;
    }
}
