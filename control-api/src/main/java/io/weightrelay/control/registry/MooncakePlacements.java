package io.weightrelay.control.registry;

import io.weightrelay.api.control.model.MooncakeFragmentBinding;
import io.weightrelay.api.control.model.MooncakePlacementImport;
import io.weightrelay.control.generation.GenerationProblems;
import io.weightrelay.reshard.placement.FragmentTemplate;
import io.weightrelay.service.problem.RelayException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.springframework.stereotype.Service;
import tools.jackson.core.JacksonException;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * One rank of a Mooncake #3187 {@code WeightPlacementManifest}, with the binding of its receive
 * buffers, translated into our fragment template: each placement fragment of the rank's part (in
 * the part's order) is a box of its tensor ({@code global_offset}, {@code local_shape}) landing
 * where its binding says. #3187 says nothing of modes, nodes, NICs or buffers: the worker's
 * registration does, as for any template. What our placements cannot take is refused naming the
 * #3187 field and its value.
 */
@Service
public class MooncakePlacements {
    private final JsonMapper json;
    private final PlacementTemplates templates;

    MooncakePlacements(JsonMapper json, PlacementTemplates templates) {
        this.json = json;
        this.templates = templates;
    }

    FragmentTemplate importRank(MooncakePlacementImport request) {
        JsonNode placement;
        try {
            placement = json.readTree(request.getPlacement());
        } catch (JacksonException ex) {
            throw RegistryProblems.INVALID_PLACEMENT.exception(
                    "placement is not #3187 JSON: " + ex.getOriginalMessage());
        }
        String kind = placement.path("resource_kind").asString("");
        if (!kind.equals("model_weight")) {
            throw inexpressible("resource_kind", kind, "only model weights are placements here");
        }
        String participant = request.getParticipantId();
        JsonNode parts = placement.path("parts");
        int index = -1;
        for (int i = 0; i < parts.size(); i++) {
            if (participant.equals(parts.get(i).path("participant_id").asString(null))) {
                index = i;
            }
        }
        if (index < 0) {
            throw inexpressible(
                    "topology.participants[].participant_id",
                    participant,
                    "the placement has no part of that participant");
        }
        JsonNode part = parts.get(index);
        Map<String, Integer> itemsizes = new HashMap<>();
        for (JsonNode tensor : placement.path("tensors")) {
            itemsizes.put(tensor.path("tensor_id").asString(), tensor.path("itemsize").asInt());
        }
        Map<String, MooncakeFragmentBinding> bindings = new HashMap<>();
        for (MooncakeFragmentBinding b : request.getBindings()) {
            if (bindings.put(b.getPlacementFragmentId(), b) != null) {
                throw RegistryProblems.INVALID_PLACEMENT.exception(
                        "two bindings of placement fragment " + b.getPlacementFragmentId());
            }
        }
        String prefix = "parts[" + index + "].fragments";
        JsonNode fragments = part.path("fragments");
        List<FragmentTemplate.Entry> entries = new ArrayList<>(fragments.size());
        Set<String> boundBytes = new HashSet<>();
        for (int j = 0; j < fragments.size(); j++) {
            JsonNode f = fragments.get(j);
            String id = f.path("placement_fragment_id").asString("");
            String tensor = f.path("tensor_id").asString("");
            MooncakeFragmentBinding b = bindings.remove(id);
            if (b == null) {
                throw inexpressible(
                        prefix + "[" + j + "].placement_fragment_id",
                        id,
                        "fragment of " + tensor + " has no binding: where would its bytes land?");
            }
            long[] offset = longs(f.path("global_offset"));
            long[] shape = longs(f.path("local_shape"));
            long[] strides;
            if (b.getStridesBytes() == null || b.getStridesBytes().isEmpty()) {
                strides = new long[shape.length];
                long stride = itemsizes.getOrDefault(tensor, 1);
                for (int d = shape.length - 1; d >= 0; d--) {
                    strides[d] = stride;
                    stride *= shape[d];
                }
            } else {
                strides = b.getStridesBytes().stream().mapToLong(Long::longValue).toArray();
            }
            if (f.path("aliases").size() > 0
                    && !boundBytes.add(b.getBufferId() + "@" + b.getBufferOffset())) {
                throw inexpressible(
                        prefix + "[" + j + "].aliases",
                        f.path("aliases").toString(),
                        "tied tensors bound to the same bytes: our placements hold every box in"
                                + " bytes of its own (bind each alias to its own bytes; the"
                                + " planner reads the stored bytes once either way)");
            }
            entries.add(
                    new FragmentTemplate.Entry(
                            tensor, offset, shape, b.getBufferId(), b.getBufferOffset(), strides));
        }
        if (!bindings.isEmpty()) {
            String stray = bindings.keySet().iterator().next();
            throw inexpressible(
                    "placement_fragment_id",
                    stray,
                    "a binding of no placement fragment of participant " + participant);
        }
        FragmentTemplate template = FragmentTemplate.of(entries);
        templates.store(template);
        return template;
    }

    private static long[] longs(JsonNode array) {
        long[] out = new long[array.size()];
        for (int i = 0; i < out.length; i++) {
            out[i] = array.get(i).asLong();
        }
        return out;
    }

    private static RelayException inexpressible(String field, String value, String why) {
        return GenerationProblems.MOONCAKE_3187_INEXPRESSIBLE
                .exception("#3187 " + field + " = " + value + ": " + why)
                .with("errors", List.of(Map.of("field", field, "message", "value " + value)));
    }
}
