package io.weightrelay.reshard.placement;

import io.weightrelay.reshard.codec.ByteSink;
import io.weightrelay.reshard.codec.ByteSource;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashSet;
import java.util.HexFormat;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The union of all loaders' registrations. Workers are kept sorted by id, so the order in which
 * loaders registered never changes the digest or the plan.
 */
public record TargetPlacement(List<Worker> workers) {
    private static final String MAGIC = "wr.placement.v1";

    public TargetPlacement {
        List<Worker> sorted = new ArrayList<>(workers);
        sorted.sort(Comparator.comparing(Worker::id));
        Set<String> ids = new HashSet<>();
        for (Worker w : sorted) {
            if (!ids.add(w.id())) {
                throw new IllegalArgumentException("duplicate worker " + w.id());
            }
        }
        workers = List.copyOf(sorted);
    }

    /** Instance ids, sorted. */
    public List<String> instances() {
        return workers.stream().map(Worker::instance).distinct().sorted().toList();
    }

    public byte[] encode() {
        ByteSink out = new ByteSink(1024);
        write(out);
        return out.toByteArray();
    }

    /**
     * SHA-256, lowercase hex, over the canonical digest form: the encoding with each worker's
     * fragment list replaced by the SHA-256 of that list's encoding. Equal placements have equal
     * digests; workers that share one fragment list (every instance of a deployment) hash it once.
     */
    public String digest() {
        Map<List<TargetFragment>, byte[]> listDigests = new IdentityHashMap<>();
        ByteSink out = ByteSink.sha256();
        out.string(MAGIC + ".digest").varInt(workers.size());
        for (Worker w : workers) {
            writeHeader(out, w);
            out.raw(listDigests.computeIfAbsent(w.fragments(), TargetPlacement::fragmentsDigest));
        }
        return out.digestHex();
    }

    private static byte[] fragmentsDigest(List<TargetFragment> fragments) {
        ByteSink out = ByteSink.sha256();
        out.varInt(fragments.size());
        for (TargetFragment f : fragments) {
            out.raw(encodeFragment(f));
        }
        return HexFormat.of().parseHex(out.digestHex());
    }

    private static void writeHeader(ByteSink out, Worker w) {
        out.string(w.id()).string(w.instance()).string(w.node());
        out.varInt(w.nicFirst()).varInt(w.nicCount()).u8(w.mode().ordinal()).string(w.segment());
    }

    private void write(ByteSink out) {
        out.string(MAGIC).varInt(workers.size());
        for (Worker w : workers) {
            writeHeader(out, w);
            out.varInt(w.fragments().size());
            for (TargetFragment f : w.fragments()) {
                out.raw(encodeFragment(f));
            }
        }
    }

    private static byte[] encodeFragment(TargetFragment f) {
        ByteSink out = new ByteSink(128);
        f.encode(out);
        return out.toByteArray();
    }

    public static TargetPlacement decode(byte[] bytes) {
        return ByteSource.decode(
                bytes, MAGIC, in -> new TargetPlacement(in.list(TargetPlacement::decodeWorker)));
    }

    private static Worker decodeWorker(ByteSource in) {
        return new Worker(
                in.string(),
                in.string(),
                in.string(),
                in.varInt(),
                in.varInt(),
                in.ordinal(Mode.values(), "mode"),
                in.string(),
                in.list(TargetFragment::decode));
    }
}
