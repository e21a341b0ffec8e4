package io.weightrelay.reshard.plan;

import java.util.Arrays;

/** Growable primitive long column. */
final class LongList {
    private long[] values;
    private int size;

    LongList(int capacity) {
        values = new long[Math.max(4, capacity)];
    }

    void add(long value) {
        if (size == values.length) {
            values = Arrays.copyOf(values, values.length + (values.length >> 1) + 1);
        }
        values[size++] = value;
    }

    long get(int index) {
        return values[index];
    }

    void set(int index, long value) {
        values[index] = value;
    }

    int size() {
        return size;
    }

    void clear() {
        size = 0;
    }

    long[] toArray() {
        return Arrays.copyOf(values, size);
    }
}
