package io.weightrelay.trainer.client;

import io.weightrelay.api.BaseUrlFailover;
import io.weightrelay.api.Dtypes;
import io.weightrelay.api.GzipRequestBodies;
import io.weightrelay.api.control.client.GenerationsApi;
import io.weightrelay.api.control.client.invoker.ApiClient;
import io.weightrelay.api.control.client.model.AbortRequest;
import io.weightrelay.api.control.client.model.Dtype;
import io.weightrelay.api.control.client.model.Nic;
import io.weightrelay.api.control.client.model.Node;
import io.weightrelay.api.control.client.model.OpenGenerationRequest;
import io.weightrelay.api.control.client.model.TensorAssignment;
import io.weightrelay.api.control.client.model.TensorSpec;
import io.weightrelay.api.control.client.model.Topology;
import io.weightrelay.reshard.manifest.SourceManifest;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;
import org.springframework.http.client.SimpleClientHttpRequestFactory;
import org.springframework.web.client.RestClient;

/** {@link Coordinator} over control-api's generated REST client. Thread safe. */
public final class RestCoordinator implements Coordinator {

    private final String baseUrl;
    private final GenerationsApi generations;
    private final long maxFragmentBytes;

    /**
     * The newest generation control-api gave this coordinator, sent with every open so that ids
     * continue above it even when Redis lost its data and its counter started again.
     */
    private final java.util.concurrent.atomic.AtomicLong newest =
            new java.util.concurrent.atomic.AtomicLong();

    /**
     * @param baseUrl control-api's base URL, or several instances' separated by commas (each call
     *     fails over to the next when one cannot be reached: {@link BaseUrlFailover})
     * @param maxFragmentBytes the bound the manifest's fragments were cut with (sent with it)
     */
    public RestCoordinator(String baseUrl, String token, Duration timeout, long maxFragmentBytes) {
        BaseUrlFailover failover = new BaseUrlFailover(baseUrl);
        SimpleClientHttpRequestFactory factory = new SimpleClientHttpRequestFactory();
        factory.setConnectTimeout(timeout);
        factory.setReadTimeout(timeout);
        RestClient rest =
                ApiClient.buildRestClientBuilder(
                                ApiClient.createDefaultMapper(ApiClient.createDefaultDateFormat()))
                        .requestFactory(factory)
                        .requestInterceptor(new GzipRequestBodies())
                        .requestInterceptor(failover)
                        .build();
        ApiClient client = new ApiClient(rest);
        client.setBasePath(failover.primary());
        if (token != null && !token.isEmpty()) {
            client.setBearerToken(token);
        }
        this.baseUrl = baseUrl;
        this.generations = new GenerationsApi(client);
        this.maxFragmentBytes = maxFragmentBytes;
    }

    @Override
    public Coordinator.OpenedGeneration open(
            SourceManifest manifest, List<String> trainerNodes, long trainerStep) {
        List<TensorSpec> tensors = new ArrayList<>();
        for (io.weightrelay.reshard.manifest.TensorSpec t : manifest.tensors()) {
            List<Long> shape = new ArrayList<>();
            for (long d : t.shape().dims()) {
                shape.add(d);
            }
            tensors.add(
                    new TensorSpec()
                            .name(t.name())
                            .shape(shape)
                            .trainerDtype(Dtype.fromValue(Dtypes.apiName(t.trainerDtype())))
                            .rolloutDtype(Dtype.fromValue(Dtypes.apiName(t.rolloutDtype()))));
        }
        List<Node> nodes = new ArrayList<>();
        for (String n : trainerNodes) {
            nodes.add(new Node().name(n).nics(List.of(new Nic().name("nic0").gbps(100.0))));
        }
        OpenGenerationRequest request =
                new OpenGenerationRequest()
                        .trainerStep(trainerStep)
                        .manifest(
                                new io.weightrelay.api.control.client.model.SourceManifest()
                                        .model(manifest.model())
                                        .tensors(tensors)
                                        .maxFragmentBytes(maxFragmentBytes))
                        .trainerTopology(new Topology().nodes(nodes))
                        .afterGeneration(newest.get() > 0 ? newest.get() : null);
        io.weightrelay.api.control.client.model.OpenedGeneration opened =
                call(
                        "open generation of step " + trainerStep,
                        () -> generations.openGeneration(manifest.model(), request));
        Map<String, String> nodeOf = new HashMap<>();
        for (TensorAssignment a : opened.getAssignment().getTensors()) {
            nodeOf.put(a.getTensor(), a.getNode());
        }
        long id = opened.getGeneration().getGeneration();
        newest.accumulateAndGet(id, Math::max);
        return new Coordinator.OpenedGeneration(id, nodeOf);
    }

    @Override
    public void commit(String model, long generation) {
        call(
                "commit " + model + "/" + generation,
                () -> generations.commitGeneration(model, generation));
    }

    @Override
    public void abort(String model, long generation, String reason) {
        String bounded = reason.length() > 2000 ? reason.substring(0, 2000) : reason;
        call(
                "abort " + model + "/" + generation,
                () ->
                        generations.abortGeneration(
                                model, generation, new AbortRequest().reason(bounded)));
    }

    private <T> T call(String what, Supplier<T> body) {
        try {
            return body.get();
        } catch (RuntimeException e) {
            throw RelayCallException.of("control-api " + baseUrl, what, e);
        }
    }
}
