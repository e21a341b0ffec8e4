package io.weightrelay.control.generation;

import static org.assertj.core.api.Assertions.assertThat;

import io.weightrelay.api.GzipResponses;
import io.weightrelay.api.control.model.Generation;
import io.weightrelay.api.control.model.OpenedGeneration;
import io.weightrelay.control.ControlApiTestSupport;
import io.weightrelay.reshard.manifest.GenerationId;
import io.weightrelay.reshard.manifest.SourceManifest;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.zip.GZIPInputStream;
import org.junit.jupiter.api.Test;
import org.springframework.http.client.SimpleClientHttpRequestFactory;
import org.springframework.web.client.RestClient;

/**
 * The encoded manifest goes gzip-compressed to a reader that accepts it, and as it is to one that
 * does not; {@link GzipResponses}, which publishers use, reads the same bytes while fewer cross the
 * wire.
 */
class ManifestCompressionTest extends ControlApiTestSupport {

    private final HttpClient http = HttpClient.newHttpClient();

    private URI encodedManifest(GenerationId generation) {
        return uri(
                "/api/v1/models/"
                        + generation.model()
                        + "/generations/"
                        + generation.generation()
                        + "/manifest/encoded");
    }

    private HttpResponse<byte[]> encoded(GenerationId generation, String acceptEncoding)
            throws Exception {
        HttpRequest.Builder request =
                HttpRequest.newBuilder(encodedManifest(generation))
                        .header("Authorization", "Bearer " + LOADER);
        if (acceptEncoding != null) {
            request.header("Accept-Encoding", acceptEncoding);
        }
        return http.send(request.build(), HttpResponse.BodyHandlers.ofByteArray());
    }

    @Test
    void theEncodedManifestIsGzippedOnlyForReadersThatAcceptIt() throws Exception {
        String model = newModel();
        OpenedGeneration opened = open(model, 1);
        long generation = opened.getGeneration().getGeneration();
        Generation stored =
                ok(
                        get("/api/v1/models/" + model + "/generations/" + generation, LOADER),
                        Generation.class);

        HttpResponse<byte[]> identity = encoded(new GenerationId(model, generation), null);
        assertThat(identity.statusCode()).isEqualTo(200);
        assertThat(identity.headers().firstValue("Content-Encoding")).isEmpty();
        assertThat(identity.headers().firstValue("Vary")).contains("Accept-Encoding");
        assertThat(SourceManifest.decode(identity.body()).digest())
                .isEqualTo(stored.getManifestDigest());

        HttpResponse<byte[]> gzipped =
                encoded(new GenerationId(model, generation), "deflate, gzip;q=0.8");
        assertThat(gzipped.statusCode()).isEqualTo(200);
        assertThat(gzipped.headers().firstValue("Content-Encoding")).contains("gzip");
        assertThat(gunzip(gzipped.body())).isEqualTo(identity.body());

        // gzip refused by weight 0, or not named: the identity bytes.
        for (String refusing : new String[] {"gzip;q=0", "br, deflate", "identity"}) {
            HttpResponse<byte[]> plain = encoded(new GenerationId(model, generation), refusing);
            assertThat(plain.headers().firstValue("Content-Encoding")).as(refusing).isEmpty();
            assertThat(plain.body()).as(refusing).isEqualTo(identity.body());
        }
    }

    @Test
    void gzipResponsesReadsTheManifestWhileItsCompressedFormCrossesTheWire() throws Exception {
        String model = newModel();
        long generation = open(model, 1).getGeneration().getGeneration();
        byte[] identity = encoded(new GenerationId(model, generation), null).body();

        AtomicReference<String> wireEncoding = new AtomicReference<>();
        AtomicLong wireLength = new AtomicLong(-1);
        // As publishers and the bench call: HttpURLConnection, which leaves the body as it came
        // (the JDK HttpClient factory, loader-service's, asks for gzip and inflates by itself).
        RestClient client =
                RestClient.builder()
                        .requestFactory(new SimpleClientHttpRequestFactory())
                        .requestInterceptor(new GzipResponses())
                        .requestInterceptor(
                                (request, body, execution) -> {
                                    var response = execution.execute(request, body);
                                    wireEncoding.set(
                                            response.getHeaders().getFirst("Content-Encoding"));
                                    wireLength.set(response.getHeaders().getContentLength());
                                    return response;
                                })
                        .build();
        byte[] read =
                client.get()
                        .uri(encodedManifest(new GenerationId(model, generation)))
                        .header("Authorization", "Bearer " + LOADER)
                        .retrieve()
                        .body(byte[].class);

        assertThat(read).isEqualTo(identity);
        assertThat(wireEncoding.get()).isEqualTo("gzip");
        assertThat(wireLength.get()).isPositive().isNotEqualTo(identity.length);
    }

    private static byte[] gunzip(byte[] body) throws IOException {
        try (GZIPInputStream in = new GZIPInputStream(new ByteArrayInputStream(body))) {
            return in.readAllBytes();
        }
    }
}
