package io.weightrelay.reshard.plan;

/**
 * A bag of byte intervals {@code [start, end)} in two primitive columns, with the checks plans and
 * slices are validated by.
 */
final class Intervals {
    private final LongList starts;
    private final LongList ends;

    Intervals(int capacity) {
        starts = new LongList(capacity);
        ends = new LongList(capacity);
    }

    void add(long start, long end) {
        if (end > start) {
            starts.add(start);
            ends.add(end);
        }
    }

    int size() {
        return starts.size();
    }

    long bytes() {
        long total = 0;
        for (int i = 0; i < starts.size(); i++) {
            total += ends.get(i) - starts.get(i);
        }
        return total;
    }

    /**
     * Adds the destination (or source) footprint of a run: {@code length} bytes at {@code offset},
     * repeated by the loops. Inner loops that continue the bytes densely widen the piece, so a
     * dense run is one interval and a strided one an interval per outer step, not per row.
     */
    void addRun(long offset, long length, long[] counts, long[] strides) {
        int loops = counts.length;
        long piece = length;
        while (loops > 0 && (counts[loops - 1] == 1 || strides[loops - 1] == piece)) {
            loops--;
            piece *= counts[loops];
        }
        expand(offset, piece, counts, strides, 0, loops);
    }

    private void expand(
            long offset, long length, long[] counts, long[] strides, int loop, int loops) {
        if (loop == loops) {
            add(offset, offset + length);
            return;
        }
        for (long i = 0; i < counts[loop]; i++) {
            expand(offset + i * strides[loop], length, counts, strides, loop + 1, loops);
        }
    }

    /**
     * Whether every byte of a run's footprint lies inside this (sorted, merged): at once when its
     * hull lies inside one interval, else interval by interval.
     */
    boolean containsRun(long offset, long length, long[] counts, long[] strides) {
        if (length == 0) {
            return true;
        }
        long low = offset;
        long high = offset + length;
        for (int k = 0; k < counts.length; k++) {
            if (counts[k] == 0) {
                return true;
            }
            long reach = (counts[k] - 1) * strides[k];
            if (reach < 0) {
                low += reach;
            } else {
                high += reach;
            }
        }
        if (contains(low, high)) {
            return true;
        }
        Intervals footprint = new Intervals(16);
        footprint.addRun(offset, length, counts, strides);
        for (int k = 0; k < footprint.size(); k++) {
            if (!contains(footprint.start(k), footprint.end(k))) {
                return false;
            }
        }
        return true;
    }

    /** Sorts by start and returns the merged (disjoint, sorted) intervals, or null on overlap. */
    Intervals sortedDisjoint() {
        int n = starts.size();
        long[] s = starts.toArray();
        long[] e = ends.toArray();
        sort(s, e, 0, n);
        Intervals merged = new Intervals(Math.max(4, n / 4));
        for (int i = 0; i < n; i++) {
            if (i > 0 && s[i] < e[i - 1]) {
                return null;
            }
            int last = merged.size() - 1;
            if (last >= 0 && merged.ends.get(last) == s[i]) {
                merged.ends.set(last, e[i]);
            } else {
                merged.add(s[i], e[i]);
            }
        }
        return merged;
    }

    /** Same set of bytes; both must be sorted and merged. */
    boolean sameAs(Intervals other) {
        if (size() != other.size()) {
            return false;
        }
        for (int i = 0; i < size(); i++) {
            if (starts.get(i) != other.starts.get(i) || ends.get(i) != other.ends.get(i)) {
                return false;
            }
        }
        return true;
    }

    /** Whether {@code [start, end)} lies inside one interval; this must be sorted and merged. */
    boolean contains(long start, long end) {
        int lo = 0;
        int hi = starts.size() - 1;
        while (lo <= hi) {
            int mid = (lo + hi) >>> 1;
            if (starts.get(mid) <= start) {
                lo = mid + 1;
            } else {
                hi = mid - 1;
            }
        }
        return hi >= 0 && ends.get(hi) >= end;
    }

    long start(int i) {
        return starts.get(i);
    }

    long end(int i) {
        return ends.get(i);
    }

    private static void sort(long[] s, long[] e, int from, int to) {
        if (to - from < 2) {
            return;
        }
        if (isSorted(s, from, to)) {
            return;
        }
        long[] ts = new long[to - from];
        long[] te = new long[to - from];
        mergeSort(s, e, ts, te, from, to);
    }

    private static boolean isSorted(long[] s, int from, int to) {
        for (int i = from + 1; i < to; i++) {
            if (s[i] < s[i - 1]) {
                return false;
            }
        }
        return true;
    }

    private static void mergeSort(long[] s, long[] e, long[] ts, long[] te, int from, int to) {
        if (to - from < 2) {
            return;
        }
        int mid = (from + to) >>> 1;
        mergeSort(s, e, ts, te, from, mid);
        mergeSort(s, e, ts, te, mid, to);
        if (s[mid - 1] <= s[mid]) {
            return;
        }
        int i = from;
        int j = mid;
        int k = 0;
        while (i < mid || j < to) {
            if (j >= to || (i < mid && s[i] <= s[j])) {
                ts[k] = s[i];
                te[k++] = e[i++];
            } else {
                ts[k] = s[j];
                te[k++] = e[j++];
            }
        }
        System.arraycopy(ts, 0, s, from, k);
        System.arraycopy(te, 0, e, from, k);
    }
}
