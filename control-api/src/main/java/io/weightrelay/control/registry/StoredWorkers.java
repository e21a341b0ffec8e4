package io.weightrelay.control.registry;

import com.fasterxml.jackson.annotation.JsonCreator;
import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonSetter;
import com.fasterxml.jackson.annotation.Nulls;
import io.weightrelay.api.common.model.ConsumeMode;
import io.weightrelay.api.common.model.ReceiveBuffer;
import io.weightrelay.api.common.model.TransferEngineBuffer;
import io.weightrelay.api.common.model.WorkerPlacement;
import io.weightrelay.control.redis.StoredJson;
import java.util.ArrayList;
import java.util.List;
import tools.jackson.databind.json.JsonMapper;

/**
 * The workers of a loader's registration as its hash keeps them in {@code workers}: each worker's
 * header and buffers, its fragments only by template digest and count (never the fragments, which
 * are stored once per template). Field names are the contract's {@code WorkerPlacement}'s; format
 * 0, written before formats existed, is a bare array of that class's JSON.
 */
@JsonInclude(JsonInclude.Include.NON_NULL)
public record StoredWorkers(@JsonSetter(nulls = Nulls.AS_EMPTY) int format, List<Worker> workers)
        implements StoredJson.Versioned {

    /** The format this control-api writes, and the newest it reads. */
    public static final int FORMAT = 1;

    @JsonCreator(mode = JsonCreator.Mode.PROPERTIES)
    public StoredWorkers {
        workers = List.copyOf(workers);
    }

    /** Format 0: the bare array. */
    @JsonCreator(mode = JsonCreator.Mode.DELEGATING)
    static StoredWorkers beforeFormats(List<Worker> workers) {
        return new StoredWorkers(0, workers);
    }

    /** A worker: {@code mode} is the contract's wire value ({@code direct}, {@code compat}). */
    @JsonInclude(JsonInclude.Include.NON_NULL)
    public record Worker(
            String workerId,
            Integer rank,
            String node,
            String nic,
            String mode,
            List<Buffer> buffers,
            String placement,
            Integer fragmentCount) {
        public Worker {
            buffers = List.copyOf(buffers);
        }
    }

    /** A receive buffer, and the worker's own Transfer Engine memory when it has one. */
    @JsonInclude(JsonInclude.Include.NON_NULL)
    public record Buffer(String bufferId, String segment, long size, EngineMemory transferEngine) {}

    /** Memory a worker registered with a Transfer Engine of its own. */
    public record EngineMemory(String segment, long address) {}

    /** A worker as kept: its header and buffers; fragments by {@code digest} and count. */
    static Worker summary(WorkerPlacement w, String digest, int fragments) {
        List<Buffer> buffers = new ArrayList<>(w.getBuffers().size());
        for (ReceiveBuffer b : w.getBuffers()) {
            TransferEngineBuffer t = b.getTransferEngine();
            buffers.add(
                    new Buffer(
                            b.getBufferId(),
                            b.getSegment(),
                            b.getSize(),
                            t == null ? null : new EngineMemory(t.getSegment(), t.getAddress())));
        }
        return new Worker(
                w.getWorkerId(),
                w.getRank(),
                w.getNode(),
                w.getNic(),
                w.getMode().getValue(),
                buffers,
                digest,
                fragments);
    }

    /** The workers as the contract answers them (no fragments, their count). */
    public List<WorkerPlacement> toApi() {
        List<WorkerPlacement> out = new ArrayList<>(workers.size());
        for (Worker w : workers) {
            List<ReceiveBuffer> buffers = new ArrayList<>(w.buffers().size());
            for (Buffer b : w.buffers()) {
                ReceiveBuffer r = new ReceiveBuffer(b.bufferId(), b.segment(), b.size());
                if (b.transferEngine() != null) {
                    r.setTransferEngine(
                            new TransferEngineBuffer(
                                    b.transferEngine().segment(), b.transferEngine().address()));
                }
                buffers.add(r);
            }
            WorkerPlacement p =
                    new WorkerPlacement(
                            w.workerId(),
                            w.node(),
                            w.nic(),
                            ConsumeMode.fromValue(w.mode()),
                            buffers);
            p.setRank(w.rank());
            p.setPlacement(w.placement());
            p.setFragmentCount(w.fragmentCount());
            out.add(p);
        }
        return out;
    }

    /** The workers stored under {@code key} (a loader's hash). */
    public static StoredWorkers read(JsonMapper json, String key, String text) {
        return StoredJson.read(json, key, text, StoredWorkers.class, FORMAT);
    }
}
