package io.weightrelay.dataplane;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import tools.jackson.core.JacksonException;
import tools.jackson.databind.json.JsonMapper;

/**
 * A supervised Mooncake agent: the child process {@code python -m weight_relay.mooncake_agent} that
 * drives the real Mooncake Store and Transfer Engine through their Python API, and the connection
 * to it (docs/dataplane.md, "Mooncake, driven through an agent").
 *
 * <p>{@link #start} spawns the agent and waits for its readiness line; a refusal (another wheel
 * version, an unpinned address, an unreachable master) is thrown as a {@link
 * MooncakeAgentException} naming the agent's error type. Each command is one frame on the agent's
 * unix socket and carries offsets into shared-memory files both processes map ({@link #map});
 * payload never crosses the socket. An agent that dies, closes its socket or does not answer within
 * the command timeout fails the command in flight with {@link MooncakeAgentGoneException} (the
 * agent is killed if it still runs: never a hang), and the next command starts a new agent, which
 * maps the same files again: callers keep their {@link Mapped} handles. Objects stored in the dead
 * agent's segment are gone with it. Thread safe: commands are serialized.
 */
final class MooncakeAgent implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger(MooncakeAgent.class.getName());
    private static final JsonMapper JSON = JsonMapper.builder().build();
    private static final int MAX_FRAME = 64 << 20;

    /**
     * How to run an agent.
     *
     * @param python the Python interpreter of a venv that has the pinned wheel
     * @param pythonPath the directory holding the {@code weight_relay} package (null: installed)
     * @param prefix a command the agent runs through ({@code ip netns exec NAME}), or empty
     * @param socket the unix socket the agent listens on
     * @param master the master's rpc {@code host:port}
     * @param hostname this agent's address for Mooncake
     * @param segmentSize bytes of store segment it mounts (0: a reading client)
     * @param protocol Mooncake's transport: {@code tcp} or {@code rdma}
     * @param metadata the metadata server URL, or {@code P2PHANDSHAKE} for none
     * @param log where its stderr goes
     */
    record Options(
            Path python,
            Path pythonPath,
            List<String> prefix,
            Path socket,
            String master,
            String hostname,
            long segmentSize,
            String protocol,
            String metadata,
            Path log,
            Duration startTimeout,
            Duration commandTimeout) {}

    /** A shared-memory file mapped in the agent: its id here and its address in the agent. */
    record Mapped(int id, Path path, long size) {}

    /**
     * What the agent said when it was ready: {@code storeEndpoint} is what {@link #replicas} names
     * for replicas in its own segment ("" without one).
     */
    record Ready(
            long pid,
            String version,
            String storeSegment,
            String storeEndpoint,
            String engineSegment) {}

    private final Options options;
    private final ScheduledExecutorService watchdog;
    private final List<Mapped> mapped = new ArrayList<>();
    private final Map<Integer, Long> agentBuffers = new LinkedHashMap<>();
    private final Map<Integer, Long> agentAddresses = new LinkedHashMap<>();
    private final List<String> deaths = new ArrayList<>();
    private Process process;
    private SocketChannel channel;
    private Ready ready;
    private long nextId;
    private int nextMapped;
    private int restarts;
    private boolean deathReported;
    private boolean closed;

    private MooncakeAgent(Options options) {
        this.options = options;
        this.watchdog =
                Executors.newSingleThreadScheduledExecutor(
                        r -> {
                            Thread t = new Thread(r, "mooncake-agent-watchdog");
                            t.setDaemon(true);
                            return t;
                        });
    }

    /** Starts an agent and waits until it is ready. */
    static MooncakeAgent start(Options options) {
        MooncakeAgent agent = new MooncakeAgent(options);
        try {
            agent.spawn();
        } catch (RuntimeException e) {
            agent.watchdog.shutdownNow();
            throw e;
        }
        return agent;
    }

    synchronized Ready ready() {
        return ready;
    }

    /** How many times the agent was started again after it died. */
    synchronized int restarts() {
        return restarts;
    }

    /**
     * Each death of an agent that was started again since the last call, once, oldest first: which
     * agent died (pid, socket), its exit status and the pid of its successor. Whatever its segment
     * held went with each one.
     */
    synchronized List<String> takeDeaths() {
        List<String> out = List.copyOf(deaths);
        deaths.clear();
        return out;
    }

    synchronized String describe() {
        return "Mooncake agent pid "
                + (ready == null ? "?" : ready.pid())
                + " at "
                + options.socket();
    }

    private void spawn() {
        List<String> cmd = new ArrayList<>(options.prefix());
        cmd.addAll(
                List.of(
                        options.python().toString(),
                        "-m",
                        "weight_relay.mooncake_agent",
                        "--socket",
                        options.socket().toString(),
                        "--master",
                        options.master(),
                        "--hostname",
                        options.hostname(),
                        "--segment-size",
                        Long.toString(options.segmentSize()),
                        "--protocol",
                        options.protocol(),
                        "--metadata",
                        options.metadata()));
        ProcessBuilder pb = new ProcessBuilder(cmd);
        if (options.pythonPath() != null) {
            pb.environment().put("PYTHONPATH", options.pythonPath().toString());
        }
        pb.environment().remove("MC_TCP_BIND_ADDRESS"); // the agent pins it itself
        pb.redirectError(ProcessBuilder.Redirect.appendTo(options.log().toFile()));
        Process p;
        try {
            p = pb.start();
        } catch (IOException e) {
            throw new MooncakeAgentException(
                    DataplaneError.IO,
                    "MooncakeSetupError",
                    "cannot start the Mooncake agent (" + String.join(" ", cmd) + "): " + e);
        }
        CompletableFuture<String> line =
                CompletableFuture.supplyAsync(
                        () -> {
                            try {
                                return new BufferedReader(
                                                new InputStreamReader(
                                                        p.getInputStream(), StandardCharsets.UTF_8))
                                        .readLine();
                            } catch (IOException e) {
                                return null;
                            }
                        });
        String first;
        try {
            first = line.get(options.startTimeout().toMillis(), TimeUnit.MILLISECONDS);
        } catch (TimeoutException e) {
            p.destroyForcibly();
            throw new MooncakeAgentException(
                    DataplaneError.TIMEOUT,
                    "MooncakeSetupError",
                    "the Mooncake agent (pid "
                            + p.pid()
                            + ") was not ready within "
                            + options.startTimeout()
                            + "; its log: "
                            + options.log());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            p.destroyForcibly();
            throw new MooncakeAgentException(
                    DataplaneError.CLOSED, "MooncakeSetupError", "interrupted starting the agent");
        } catch (ExecutionException e) {
            throw new IllegalStateException(e);
        }
        if (first == null) {
            int status = waitFor(p);
            throw new MooncakeAgentGoneException(
                    "the Mooncake agent (pid "
                            + p.pid()
                            + ") exited with status "
                            + status
                            + " before it was ready; its log: "
                            + options.log());
        }
        Map<String, Object> body = parse(first.getBytes(StandardCharsets.UTF_8));
        if (body.get("error") instanceof Map<?, ?> error) {
            waitFor(p);
            throw failure(error, "start");
        }
        if (!(body.get("ready") instanceof Map<?, ?> r)) {
            p.destroyForcibly();
            throw new MooncakeAgentException(
                    DataplaneError.PROTOCOL,
                    "AgentProtocolError",
                    "the Mooncake agent printed no readiness line: " + first);
        }
        SocketChannel ch;
        try {
            ch = SocketChannel.open(StandardProtocolFamily.UNIX);
            ch.connect(UnixDomainSocketAddress.of(options.socket()));
        } catch (IOException e) {
            p.destroyForcibly();
            throw new MooncakeAgentGoneException(
                    "cannot connect to the Mooncake agent at " + options.socket() + ": " + e);
        }
        this.process = p;
        this.channel = ch;
        this.deathReported = false;
        this.ready =
                new Ready(
                        ((Number) r.get("pid")).longValue(),
                        (String) r.get("version"),
                        (String) r.get("store_segment"),
                        (String) r.get("store_endpoint"),
                        (String) r.get("engine_segment"));
        p.onExit().thenRun(() -> closeQuietly(ch));
        // a new agent knows nothing of the files the old one mapped
        agentBuffers.clear();
        agentAddresses.clear();
        for (Mapped m : mapped) {
            Map<String, Object> answer =
                    exchange("map", Map.of("path", m.path().toString(), "size", m.size()));
            agentBuffers.put(m.id(), ((Number) answer.get("buffer")).longValue());
            agentAddresses.put(m.id(), ((Number) answer.get("address")).longValue());
        }
    }

    /** Closes the socket of an agent that exited, so a command blocked on it returns at once. */
    private static void closeQuietly(SocketChannel ch) {
        if (ch != null) {
            try {
                ch.close();
            } catch (IOException e) {
                LOG.log(System.Logger.Level.DEBUG, "closing the agent's socket: " + e);
            }
        }
    }

    private static int waitFor(Process p) {
        try {
            if (!p.waitFor(10, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                return p.waitFor();
            }
            return p.exitValue();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return -1;
        }
    }

    /**
     * Runs one command, starting the agent again first if the previous one died; a failed command
     * throws its typed exception.
     */
    synchronized Map<String, Object> call(String op, Map<String, Object> args) {
        ensureRunning(op);
        return exchange(op, args);
    }

    /**
     * Starts the agent again when it died; throws {@link MooncakeAgentGoneException} when nobody
     * was told of that death yet ({@code op} was not run).
     */
    private void ensureRunning(String op) {
        if (closed) {
            throw new DataplaneClosedException(describe());
        }
        if (process == null || !process.isAlive() || !channel.isOpen()) {
            Process dead = process;
            String before = describe();
            LOG.log(System.Logger.Level.WARNING, before + " is gone: starting it again");
            boolean reported = deathReported;
            restarts++;
            spawn();
            String death =
                    before
                            + " died (exit status "
                            + waitFor(dead)
                            + "); started again as pid "
                            + ready.pid();
            deaths.add(death);
            if (!reported) {
                // it died between commands: the caller must still learn that its segment's
                // objects went with it
                deathReported = true;
                throw new MooncakeAgentGoneException(
                        death
                                + "; it died since its last command: '"
                                + op
                                + "' was not run, and objects in its segment are gone");
            }
        }
    }

    private Map<String, Object> exchange(String op, Map<String, Object> args) {
        long id = ++nextId;
        Map<String, Object> cmd = new LinkedHashMap<>(args);
        cmd.put("id", id);
        cmd.put("op", op);
        AtomicBoolean timedOut = new AtomicBoolean();
        Process p = process;
        ScheduledFuture<?> timer =
                watchdog.schedule(
                        () -> {
                            timedOut.set(true);
                            p.destroyForcibly(); // a stuck agent: its exit closes the socket
                        },
                        options.commandTimeout().toMillis(),
                        TimeUnit.MILLISECONDS);
        Map<String, Object> answer;
        try {
            byte[] body = JSON.writeValueAsBytes(cmd);
            ByteBuffer out = ByteBuffer.allocate(4 + body.length).putInt(body.length).put(body);
            out.flip();
            while (out.hasRemaining()) {
                channel.write(out);
            }
            answer = readFrame();
        } catch (IOException e) {
            throw gone(op, p, timedOut.get(), e.toString());
        } finally {
            timer.cancel(false);
        }
        if (answer == null) {
            throw gone(op, p, timedOut.get(), "it closed its socket");
        }
        if (!(answer.get("id") instanceof Number n) || n.longValue() != id) {
            throw new MooncakeAgentException(
                    DataplaneError.PROTOCOL,
                    "AgentProtocolError",
                    describe() + " answered " + answer.get("id") + " to command " + id);
        }
        if (!Boolean.TRUE.equals(answer.get("ok"))) {
            throw failure(answer.get("error") instanceof Map<?, ?> e ? e : Map.of(), op);
        }
        return answer;
    }

    private MooncakeAgentGoneException gone(String op, Process p, boolean timedOut, String why) {
        deathReported = true;
        if (p.isAlive()) {
            p.destroyForcibly();
        }
        int status = waitFor(p);
        return new MooncakeAgentGoneException(
                describe()
                        + (timedOut
                                ? " did not answer '"
                                        + op
                                        + "' within "
                                        + options.commandTimeout()
                                        + " and was killed"
                                : " died during '" + op + "' (exit status " + status + ")")
                        + ": the command's outcome is unknown ("
                        + why
                        + "); its log: "
                        + options.log());
    }

    private Map<String, Object> readFrame() throws IOException {
        ByteBuffer head = ByteBuffer.allocate(4);
        if (!readFully(head)) {
            return null;
        }
        int length = head.flip().getInt();
        if (length < 0 || length > MAX_FRAME) {
            throw new IOException("frame of " + length + " bytes");
        }
        ByteBuffer body = ByteBuffer.allocate(length);
        if (!readFully(body)) {
            return null;
        }
        return parse(body.array());
    }

    private boolean readFully(ByteBuffer buffer) throws IOException {
        while (buffer.hasRemaining()) {
            if (channel.read(buffer) < 0) {
                return false;
            }
        }
        return true;
    }

    @SuppressWarnings("unchecked")
    private Map<String, Object> parse(byte[] bytes) {
        try {
            return JSON.readValue(bytes, Map.class);
        } catch (JacksonException e) {
            throw new MooncakeAgentException(
                    DataplaneError.PROTOCOL,
                    "AgentProtocolError",
                    "the Mooncake agent sent what is not a JSON object: " + e.getMessage());
        }
    }

    private MooncakeAgentException failure(Map<?, ?> error, String op) {
        String type = String.valueOf(error.get("type"));
        String message = String.valueOf(error.get("message"));
        if ("MooncakeOperationError".equals(type)) {
            return new MooncakeOperationException(
                    String.valueOf(error.get("op")),
                    error.get("code") instanceof Number c ? c.intValue() : -1,
                    String.valueOf(error.get("code_name")),
                    error.get("key") == null ? null : String.valueOf(error.get("key")),
                    message + " (" + describe() + ")");
        }
        DataplaneError code =
                switch (type) {
                    case "MooncakeAddressError" -> DataplaneError.INVALID_ARGUMENT;
                    case "AgentProtocolError" -> DataplaneError.PROTOCOL;
                    default -> DataplaneError.IO;
                };
        return new MooncakeAgentException(
                code, type, type + " from the Mooncake agent during '" + op + "': " + message);
    }

    // -- commands -------------------------------------------------------------------------------

    /** Maps {@code size} bytes of the shared-memory file {@code path} in the agent. */
    synchronized Mapped map(Path path, long size) {
        if (!Files.isRegularFile(path)) {
            throw new IllegalArgumentException("no shared-memory file " + path);
        }
        Map<String, Object> answer = call("map", Map.of("path", path.toString(), "size", size));
        Mapped m = new Mapped(++nextMapped, path, size); // ids stay unique across unmaps
        mapped.add(m);
        agentBuffers.put(m.id(), ((Number) answer.get("buffer")).longValue());
        agentAddresses.put(m.id(), ((Number) answer.get("address")).longValue());
        return m;
    }

    /** Unmaps {@code m} in the agent (and forgets it: a restarted agent does not map it again). */
    synchronized void unmap(Mapped m) {
        if (!mapped.remove(m)) {
            return;
        }
        Long buffer = agentBuffers.remove(m.id());
        agentAddresses.remove(m.id());
        if (!closed && process != null && process.isAlive() && buffer != null) {
            call("unmap", Map.of("buffer", buffer));
        }
    }

    /** Per key, whether Mooncake holds an object under it. */
    List<Boolean> exists(List<String> keys) {
        return ints(call("exists", Map.of("keys", keys)).get("exists")).stream()
                .map(x -> x == 1)
                .toList();
    }

    /** The address of {@code m} in the (current) agent: what a peer writes to one-sided. */
    synchronized long address(Mapped m) {
        return agentAddresses.get(m.id());
    }

    private synchronized Map<String, Object> onBuffer(
            String op, Mapped m, Map<String, Object> args) {
        ensureRunning(op); // a new agent maps the files anew: its buffer ids differ
        Map<String, Object> withBuffer = new LinkedHashMap<>(args);
        withBuffer.put("buffer", agentBuffers.get(m.id()));
        return exchange(op, withBuffer);
    }

    void ping() {
        call("ping", Map.of());
    }

    /**
     * {@code batch_put_from} of {@code keys} from {@code m} ({@code ReplicateConfig{replica_num=1,
     * preferred_segment=preferred (null: the agent's own), with_hard_pin=true}}); per key 0 or
     * Mooncake's code.
     */
    List<Integer> put(
            Mapped m, List<String> keys, List<Long> offsets, List<Long> sizes, String preferred) {
        return put(m, keys, offsets, sizes, preferred, 1, true);
    }

    /** {@link #put}, with {@code replica_num} and {@code with_hard_pin} given. */
    List<Integer> put(
            Mapped m,
            List<String> keys,
            List<Long> offsets,
            List<Long> sizes,
            String preferred,
            int replicaNum,
            boolean hardPin) {
        Map<String, Object> args = new LinkedHashMap<>();
        args.put("keys", keys);
        args.put("offsets", offsets);
        args.put("sizes", sizes);
        args.put("preferred_segment", preferred);
        args.put("replica_num", replicaNum);
        args.put("hard_pin", hardPin);
        return ints(onBuffer("put", m, args).get("codes"));
    }

    /** One range of an object and where it lands in the mapped file. */
    record Span(long destinationOffset, long objectOffset, long length) {}

    /** One object's ranges of a {@link #getIntoRanges} command. */
    record Read(String key, List<Span> ranges) {}

    /**
     * {@code get_into_ranges} of several objects into {@code m}: per object and range, the bytes
     * read or Mooncake's negative code.
     */
    List<List<Long>> getIntoRanges(Mapped m, List<Read> reads) {
        List<Map<String, Object>> body = new ArrayList<>();
        for (Read r : reads) {
            body.add(
                    Map.of(
                            "key", r.key(),
                            "dst", r.ranges().stream().map(Span::destinationOffset).toList(),
                            "src", r.ranges().stream().map(Span::objectOffset).toList(),
                            "len", r.ranges().stream().map(Span::length).toList()));
        }
        Object got = onBuffer("get_ranges", m, Map.of("reads", body)).get("bytes");
        List<List<Long>> out = new ArrayList<>();
        for (Object perKey : (List<?>) got) {
            out.add(((List<?>) perKey).stream().map(x -> ((Number) x).longValue()).toList());
        }
        return out;
    }

    /** Per key, the transport endpoints of its memory replicas. */
    List<List<String>> replicas(List<String> keys) {
        List<List<String>> out = new ArrayList<>();
        for (Object perKey : (List<?>) call("replicas", Map.of("keys", keys)).get("replicas")) {
            out.add(((List<?>) perKey).stream().map(String::valueOf).toList());
        }
        return out;
    }

    /** Per key, the object's size in bytes ({@code get_size}) or Mooncake's negative code. */
    List<Long> sizes(List<String> keys) {
        return ((List<?>) call("sizes", Map.of("keys", keys)).get("sizes"))
                .stream().map(x -> ((Number) x).longValue()).toList();
    }

    /** Per key, 0 or Mooncake's code ({@code OBJECT_HAS_LEASE} -706 while a read's lease runs). */
    List<Integer> remove(List<String> keys, boolean force) {
        return ints(call("remove", Map.of("keys", keys, "force", force)).get("codes"));
    }

    /**
     * A Transfer Engine one-sided write of {@code (localOffset, remoteAddress, length)} ranges of
     * {@code m} into the engine segment {@code target} ({@code host:port}).
     */
    void write(Mapped m, String target, List<long[]> ranges) {
        write(m, target, ranges, null, null);
    }

    /**
     * {@link #write}, and with {@code notifyName} not null the target's Transfer Engine receives
     * the notify {@code (notifyName, message)} once the bytes landed ({@code batch_transfer_sync}
     * with a {@code TransferNotify}).
     */
    void write(Mapped m, String target, List<long[]> ranges, String notifyName, String message) {
        Map<String, Object> args = new LinkedHashMap<>();
        args.put("target", target);
        args.put("local", ranges.stream().map(r -> r[0]).toList());
        args.put("remote", ranges.stream().map(r -> r[1]).toList());
        args.put("len", ranges.stream().map(r -> r[2]).toList());
        if (notifyName != null) {
            args.put("notify", Map.of("name", notifyName, "msg", message));
        }
        onBuffer("write", m, args);
    }

    /** The names of the notifies delivered to the agent's Transfer Engine since the last call. */
    List<String> notifies() {
        return ((List<?>) call("notifies", Map.of()).get("notifies"))
                .stream().map(n -> String.valueOf(((Map<?, ?>) n).get("name"))).toList();
    }

    /**
     * A Transfer Engine one-sided read of {@code (localOffset, remoteAddress, length)} ranges from
     * the engine segment {@code target} ({@code host:port}) into {@code m}.
     */
    void read(Mapped m, String target, List<long[]> ranges) {
        onBuffer(
                "read",
                m,
                Map.of(
                        "target", target,
                        "local", ranges.stream().map(r -> r[0]).toList(),
                        "remote", ranges.stream().map(r -> r[1]).toList(),
                        "len", ranges.stream().map(r -> r[2]).toList()));
    }

    private static List<Integer> ints(Object list) {
        return ((List<?>) list).stream().map(x -> ((Number) x).intValue()).toList();
    }

    /** Kills the agent process (tests: an agent that dies). */
    synchronized Process process() {
        return process;
    }

    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        try {
            if (process != null && process.isAlive()) {
                try {
                    exchange("shutdown", Map.of());
                } catch (RuntimeException e) {
                    LOG.log(System.Logger.Level.DEBUG, "agent shutdown: " + e.getMessage());
                } finally {
                    if (!waitForExit(process)) {
                        process.destroyForcibly();
                    }
                }
            }
        } finally {
            watchdog.shutdownNow();
            closeQuietly(channel);
        }
    }

    private static boolean waitForExit(Process p) {
        try {
            return p.waitFor(5, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }
}
