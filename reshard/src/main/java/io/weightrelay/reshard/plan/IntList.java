package io.weightrelay.reshard.plan;

import java.util.Arrays;

/** Growable primitive int column. */
final class IntList {
    private int[] values;
    private int size;

    IntList(int capacity) {
        values = new int[Math.max(4, capacity)];
    }

    void add(int value) {
        if (size == values.length) {
            values = Arrays.copyOf(values, values.length + (values.length >> 1) + 1);
        }
        values[size++] = value;
    }

    int get(int index) {
        return values[index];
    }

    void set(int index, int value) {
        values[index] = value;
    }

    void clear() {
        size = 0;
    }

    int size() {
        return size;
    }

    int[] toArray() {
        return Arrays.copyOf(values, size);
    }
}
