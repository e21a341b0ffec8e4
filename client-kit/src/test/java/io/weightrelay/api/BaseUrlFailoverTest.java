package io.weightrelay.api;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.sun.net.httpserver.HttpServer;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.springframework.http.MediaType;
import org.springframework.web.client.ResourceAccessException;
import org.springframework.web.client.RestClient;

/**
 * {@link BaseUrlFailover} on real sockets: a request to an instance that refuses the connection
 * goes, with its body, to the next one, which is then tried first; an HTTP answer (even a 503) is
 * not failed over; with no instance left the error names every URL.
 */
class BaseUrlFailoverTest {

    private final List<HttpServer> servers = new CopyOnWriteArrayList<>();
    private final List<String> seen = new CopyOnWriteArrayList<>();

    @AfterEach
    void stop() {
        servers.forEach(s -> s.stop(0));
    }

    private String serve(String name, int status) throws IOException {
        HttpServer server =
                HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
        server.createContext(
                "/",
                exchange -> {
                    String body =
                            new String(
                                    exchange.getRequestBody().readAllBytes(),
                                    StandardCharsets.UTF_8);
                    seen.add(name + " " + exchange.getRequestURI() + " " + body);
                    byte[] answer = name.getBytes(StandardCharsets.UTF_8);
                    exchange.sendResponseHeaders(status, answer.length);
                    exchange.getResponseBody().write(answer);
                    exchange.close();
                });
        server.start();
        servers.add(server);
        return "http://127.0.0.1:" + server.getAddress().getPort();
    }

    private static String deadUrl() throws IOException {
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return "http://127.0.0.1:" + s.getLocalPort();
        }
    }

    private static RestClient client(BaseUrlFailover failover) {
        return RestClient.builder().requestInterceptor(failover).build();
    }

    @Test
    void aRefusedConnectionGoesWithItsBodyToTheNextInstanceWhichIsThenTriedFirst()
            throws IOException {
        String dead = deadUrl();
        String live = serve("b", 200);
        BaseUrlFailover failover = new BaseUrlFailover(dead + "/, " + live);
        assertThat(failover.primary()).isEqualTo(dead);
        RestClient rest = client(failover);

        String answer =
                rest.post()
                        .uri(failover.primary() + "/api/v1/x?y=1")
                        .contentType(MediaType.TEXT_PLAIN)
                        .body("payload")
                        .retrieve()
                        .body(String.class);
        assertThat(answer).isEqualTo("b");
        assertThat(seen).containsExactly("b /api/v1/x?y=1 payload");

        // the instance that answered is asked first from now on, even for the primary's URLs
        rest.get().uri(failover.primary() + "/again").retrieve().toBodilessEntity();
        assertThat(seen).hasSize(2).last().asString().startsWith("b /again");
    }

    /**
     * An instance that answers with a status line and then dies before the end of its body: the
     * request goes to the next instance, as when the connection is refused.
     */
    @Test
    void anAnswerCutOffBeforeTheEndOfItsBodyGoesToTheNextInstance() throws Exception {
        ServerSocket dying = new ServerSocket(0, 1, InetAddress.getLoopbackAddress());
        Thread server =
                new Thread(
                        () -> {
                            try (dying;
                                    Socket s = dying.accept()) {
                                BufferedReader in =
                                        new BufferedReader(
                                                new InputStreamReader(
                                                        s.getInputStream(),
                                                        StandardCharsets.US_ASCII));
                                String line;
                                while ((line = in.readLine()) != null && !line.isEmpty()) {
                                    // the request's head; a GET has no body
                                }
                                s.getOutputStream()
                                        .write(
                                                ("HTTP/1.1 200 OK\r\nContent-Type: application/json"
                                                                + "\r\nContent-Length: 100\r\n\r\n[\"a\",")
                                                        .getBytes(StandardCharsets.US_ASCII));
                                s.getOutputStream().flush();
                            } catch (IOException e) {
                                seen.add("dying server: " + e);
                            }
                        },
                        "dying-instance");
        server.start();
        String cut = "http://127.0.0.1:" + dying.getLocalPort();
        String live = serve("[\"b\"]", 200);
        BaseUrlFailover failover = new BaseUrlFailover(cut + "," + live);

        String answer = client(failover).get().uri(cut + "/loaders").retrieve().body(String.class);

        server.join(10_000);
        assertThat(answer).isEqualTo("[\"b\"]");
        assertThat(seen).containsExactly("[\"b\"] /loaders ");
    }

    @Test
    void anHttpAnswerIsNotFailedOverEvenA503() throws IOException {
        String unavailable = serve("a", 503);
        String other = serve("b", 200);
        BaseUrlFailover failover = new BaseUrlFailover(unavailable + "," + other);
        RestClient rest = client(failover);
        int status =
                rest.get()
                        .uri(failover.primary() + "/x")
                        .exchange((request, response) -> response.getStatusCode().value());
        assertThat(status).isEqualTo(503);
        assertThat(seen).containsExactly("a /x ");
    }

    @Test
    void withNoInstanceLeftTheErrorNamesEveryUrl() throws IOException {
        String one = deadUrl();
        String two = deadUrl();
        BaseUrlFailover failover = new BaseUrlFailover(one + "," + two);
        assertThatThrownBy(
                        () -> client(failover).get().uri(one + "/x").retrieve().toBodilessEntity())
                .isInstanceOf(ResourceAccessException.class)
                .hasMessageContaining(one + "," + two);
    }

    @Test
    void badListsAreRefusedNamingTheUrl() {
        assertThatThrownBy(() -> new BaseUrlFailover(" , "))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("no base URL");
        assertThatThrownBy(() -> new BaseUrlFailover("http://a:1,ftp://b"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("'ftp://b'");
    }
}
