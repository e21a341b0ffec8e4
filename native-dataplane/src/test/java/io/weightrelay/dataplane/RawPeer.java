package io.weightrelay.dataplane;

import java.io.DataInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.SecureRandom;
import java.util.Arrays;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/**
 * Speaks the engine's wire protocol byte by byte (README.md, "Wire format"), so tests can play
 * peers that no engine would: no secret, a wrong one, replays, truncations, stalls, bad ranges.
 */
final class RawPeer implements AutoCloseable {
    static final int ROLE_PEER = 1;
    static final int ROLE_REMOVER = 2;
    static final int ROLE_STORER = 3;
    static final int OP_WRITE = 1;
    static final int OP_READ = 2;
    static final int OP_NOTIFY = 3;
    static final int OP_ALLOC = 4;
    static final int OP_FREE = 5;
    private static final int HELLO_MAGIC = 0x48445257;
    private static final int CHALLENGE_MAGIC = 0x43445257;
    private static final int ACK_MAGIC = 0x41445257;
    private static final int REQUEST_MAGIC = 0x57524450;

    private final Socket socket;
    private final OutputStream out;
    private final DataInputStream in;

    /** The last handshake's hello and proof as sent, for replay tests. */
    byte[] lastHello;

    byte[] lastProof;

    /** The key of this connection's request MACs once a handshake was accepted. */
    private byte[] requestKey;

    private long sequence;
    private java.util.function.ToLongFunction<String> incarnations = name -> 0;

    RawPeer(int port) throws IOException {
        socket = new Socket();
        socket.connect(new InetSocketAddress("127.0.0.1", port), 5000);
        socket.setSoTimeout(30_000);
        socket.setTcpNoDelay(true);
        out = socket.getOutputStream();
        in = new DataInputStream(socket.getInputStream());
    }

    /** Result of a handshake attempt. */
    enum Outcome {
        ACCEPTED,
        DENIED,
        BUSY,
        REFUSED,
        CLOSED
    }

    /** The full client side of the handshake with the key of role derived from this secret. */
    Outcome handshake(byte[] secret, int role) throws IOException {
        return handshakeWithKey(roleKey(secret, role), role);
    }

    /** The full client side of the handshake claiming role and proving it with key. */
    Outcome handshakeWithKey(byte[] key, int role) throws IOException {
        byte[] nonce = new byte[32];
        new SecureRandom().nextBytes(nonce);
        byte[] hello = hello(role, nonce);
        send(hello);
        byte[] challenge = frameOrNull(72, CHALLENGE_MAGIC, "challenge");
        if (challenge == null) {
            return Outcome.CLOSED;
        }
        int status = challenge[5];
        if (status == 1) {
            return Outcome.BUSY;
        }
        if (status != 0) {
            return Outcome.REFUSED;
        }
        byte[] expected =
                hmac(key, ascii("WRDP1 server"), hello, Arrays.copyOfRange(challenge, 0, 40));
        if (!Arrays.equals(expected, Arrays.copyOfRange(challenge, 40, 72))) {
            return Outcome.DENIED; // the server is not of our deployment
        }
        byte[] proof = hmac(key, ascii("WRDP1 client"), hello, challenge);
        lastHello = hello;
        lastProof = proof;
        send(proof);
        Outcome outcome = readAck();
        if (outcome == Outcome.ACCEPTED) {
            requestKey = hmac(key, ascii("WRDP2 request"), hello, challenge);
            sequence = 0;
        }
        return outcome;
    }

    /**
     * One request of this authenticated connection: header, name and the MAC of both under the
     * connection's key and its next sequence number (README.md, "Wire format").
     */
    /**
     * Where {@link #request} finds the incarnation of the segment it names (a descriptor lookup in
     * the test's metadata); 0, which every owner refuses, until one is set.
     */
    RawPeer withIncarnations(java.util.function.ToLongFunction<String> lookup) {
        this.incarnations = lookup;
        return this;
    }

    byte[] request(int op, long offset, long length, String name) {
        if (requestKey == null) {
            throw new IllegalStateException("no accepted handshake on this connection");
        }
        byte[] h = header(op, offset, length, incarnations.applyAsLong(name), name);
        byte[] seq =
                ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putLong(sequence++).array();
        byte[] mac = Arrays.copyOf(hmac(requestKey, seq, h), 16);
        byte[] out = Arrays.copyOf(h, h.length + mac.length);
        System.arraycopy(mac, 0, out, h.length, mac.length);
        return out;
    }

    /** Sends a recorded hello and proof as they were, whatever the server's new challenge says. */
    Outcome replay(byte[] hello, byte[] proof) throws IOException {
        send(hello);
        if (readOrNull(72) == null) {
            return Outcome.CLOSED;
        }
        send(proof);
        return readAck();
    }

    private Outcome readAck() throws IOException {
        byte[] ack = frameOrNull(8, ACK_MAGIC, "ack");
        if (ack == null) {
            return Outcome.CLOSED;
        }
        int status = le(ack).getInt(4);
        return status == 0
                ? Outcome.ACCEPTED
                : (status == 1 ? Outcome.BUSY : Outcome.DENIED); // 1: authenticated slots full
    }

    /** A frame of n bytes that must start with magic, or null when the server closed first. */
    private byte[] frameOrNull(int n, int magic, String what) throws IOException {
        byte[] frame = readOrNull(n);
        if (frame != null && le(frame).getInt(0) != magic) {
            throw new IllegalStateException("not a " + what);
        }
        return frame;
    }

    static byte[] hello(int role, byte[] nonce) {
        ByteBuffer b = ByteBuffer.allocate(40).order(ByteOrder.LITTLE_ENDIAN);
        b.putInt(HELLO_MAGIC).put((byte) 2).put((byte) role).putShort((short) 0).put(nonce);
        return b.array();
    }

    /** A request header and name, without a MAC (what no authenticated client sends). */
    static byte[] header(int op, long offset, long length, String name) {
        return header(op, offset, length, 0, name);
    }

    /** A request header naming the segment's incarnation, and the name (and nothing else). */
    static byte[] header(int op, long offset, long length, long incarnation, String name) {
        byte[] n = name.getBytes(StandardCharsets.UTF_8);
        ByteBuffer b = ByteBuffer.allocate(40 + n.length).order(ByteOrder.LITTLE_ENDIAN);
        b.putInt(REQUEST_MAGIC).putInt(op).putLong(offset).putLong(length);
        b.putInt(n.length).putInt(0).putLong(incarnation).put(n);
        return b.array();
    }

    /** The 16-byte reply: status, value. */
    record Reply(int status, long value) {}

    Reply reply() throws IOException {
        byte[] r = readOrNull(16);
        if (r == null) {
            throw new EOFException("closed instead of a reply");
        }
        ByteBuffer b = le(r);
        return new Reply(b.getInt(0), b.getLong(8));
    }

    void send(byte[] bytes) throws IOException {
        out.write(bytes);
        out.flush();
    }

    byte[] read(int n) throws IOException {
        byte[] b = new byte[n];
        in.readFully(b);
        return b;
    }

    /** n bytes, or null when the server closed the connection first. */
    byte[] readOrNull(int n) throws IOException {
        try {
            return read(n);
        } catch (EOFException e) {
            return null;
        } catch (java.net.SocketException e) {
            return null; // reset: closed as well
        }
    }

    /** True once the server closed the connection (EOF or reset) within the socket timeout. */
    boolean closedByServer(int timeoutMs) throws IOException {
        socket.setSoTimeout(timeoutMs);
        InputStream s = socket.getInputStream();
        try {
            return s.read() < 0;
        } catch (SocketTimeoutException e) {
            return false;
        } catch (java.net.SocketException e) {
            return true;
        }
    }

    static byte[] roleKey(byte[] secret, int role) {
        return hmac(secret, ascii("weight-relay dataplane v1 role key"), new byte[] {(byte) role});
    }

    static byte[] hmac(byte[] key, byte[]... parts) {
        try {
            Mac mac = Mac.getInstance("HmacSHA256");
            mac.init(new SecretKeySpec(key.length == 0 ? new byte[1] : key, "HmacSHA256"));
            for (byte[] p : parts) {
                mac.update(p);
            }
            return mac.doFinal();
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException(e);
        }
    }

    private static byte[] ascii(String s) {
        return s.getBytes(StandardCharsets.US_ASCII);
    }

    private static ByteBuffer le(byte[] b) {
        return ByteBuffer.wrap(b).order(ByteOrder.LITTLE_ENDIAN);
    }

    @Override
    public void close() throws IOException {
        socket.close();
    }
}
