package io.weightrelay.reshard.codec;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.LongRange;
import org.junit.jupiter.api.Test;

class CodecTest {
    @Property(tries = 200)
    void varintsAndStringsRoundTrip(
            @ForAll @LongRange(min = 0, max = Long.MAX_VALUE) long value, @ForAll String text) {
        byte[] bytes = new ByteSink().varLong(value).string(text).fixedLong(-value).toByteArray();
        ByteSource in = new ByteSource(bytes);
        assertThat(in.varLong()).isEqualTo(value);
        assertThat(in.string()).isEqualTo(text);
        assertThat(in.fixedLong()).isEqualTo(-value);
        in.expectEnd();
    }

    @Test
    void streamingDigestEqualsDigestOfTheBytes() {
        ByteSink kept = new ByteSink();
        ByteSink streamed = ByteSink.sha256();
        for (int i = 0; i < 100_000; i++) {
            kept.varInt(i).string("t" + i);
            streamed.varInt(i).string("t" + i);
        }
        streamed.raw(new byte[200_000]);
        kept.raw(new byte[200_000]);
        assertThat(streamed.digestHex()).isEqualTo(Digests.sha256Hex(kept.toByteArray()));
        assertThat(Digests.sha256Hex(new byte[0]))
                .isEqualTo("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    }

    @Test
    void badInputFailsClosed() {
        assertThatThrownBy(() -> new ByteSink().varLong(-1))
                .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> new ByteSource(new byte[] {(byte) 0x80}).varLong())
                .isInstanceOf(CodecException.class);
        assertThatThrownBy(() -> new ByteSource(new byte[] {5, 'a'}).string())
                .isInstanceOf(CodecException.class);
        assertThatThrownBy(() -> new ByteSource(new ByteSink().varInt(1000).toByteArray()).count())
                .isInstanceOf(CodecException.class);
        assertThatThrownBy(
                        () ->
                                new ByteSource(new ByteSink().string("x").toByteArray())
                                        .expectMagic("y"))
                .isInstanceOf(CodecException.class);
    }
}
