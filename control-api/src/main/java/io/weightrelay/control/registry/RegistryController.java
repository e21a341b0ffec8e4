package io.weightrelay.control.registry;

import io.weightrelay.api.control.model.Loader;
import io.weightrelay.api.control.model.LoaderHeartbeat;
import io.weightrelay.api.control.model.LoaderRegistration;
import io.weightrelay.api.control.model.MooncakePlacementImport;
import io.weightrelay.api.control.model.PlacementTemplate;
import io.weightrelay.api.control.model.SegmentOwner;
import io.weightrelay.api.control.model.SegmentRegistration;
import io.weightrelay.api.control.server.RegistryApi;
import io.weightrelay.control.web.EncodedBodies;
import io.weightrelay.reshard.placement.FragmentTemplate;
import io.weightrelay.service.problem.CommonProblems;
import io.weightrelay.service.problem.RelayException;
import io.weightrelay.service.security.Caller;
import io.weightrelay.service.security.Role;
import java.io.IOException;
import java.io.InputStream;
import java.util.List;
import org.springframework.core.io.Resource;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.RestController;

@RestController
record RegistryController(
        Registry registry, PlacementTemplates templates, MooncakePlacements mooncake)
        implements RegistryApi {

    @Override
    public ResponseEntity<SegmentOwner> registerSegment(
            String segment, SegmentRegistration registration) {
        Caller caller = Caller.current().orElseThrow();
        if (registration.getAdminUrl() != null && caller.role() != Role.OWNER) {
            throw new RelayException(
                            CommonProblems.FORBIDDEN,
                            "role "
                                    + caller.role().configName()
                                    + " may not register an admin URL for segment '"
                                    + segment
                                    + "': control-api sends its owner credential there; register"
                                    + " with an owner token (relay.publish.owner-token)")
                    .with("segment", segment);
        }
        return ResponseEntity.ok(registry.registerSegment(segment, registration, caller.role()));
    }

    @Override
    public ResponseEntity<SegmentOwner> heartbeatSegment(String segment) {
        return ResponseEntity.ok(registry.heartbeatSegment(segment));
    }

    @Override
    public ResponseEntity<SegmentOwner> getSegment(String segment) {
        return ResponseEntity.ok(registry.getSegment(segment));
    }

    @Override
    public ResponseEntity<Void> deregisterSegment(String segment) {
        Caller caller = Caller.current().orElseThrow();
        if (caller.role() == Role.TRAINER && registry.registeredByOwner(segment)) {
            throw Registry.ownedByOwner(segment, caller.role(), "deregister");
        }
        registry.deregisterSegment(segment);
        return ResponseEntity.noContent().build();
    }

    @Override
    public ResponseEntity<List<SegmentOwner>> listSegments() {
        return ResponseEntity.ok(registry.liveSegments());
    }

    @Override
    public ResponseEntity<Loader> registerLoader(String instance, LoaderRegistration registration) {
        return ResponseEntity.ok(registry.registerLoader(instance, registration));
    }

    @Override
    public ResponseEntity<PlacementTemplate> putPlacementTemplate(String digest, Resource body) {
        byte[] bytes;
        try (InputStream in = body.getInputStream()) {
            bytes = in.readAllBytes();
        } catch (IOException ex) {
            throw CommonProblems.INVALID_REQUEST.exception(
                    "could not read the template body: " + ex.getMessage());
        }
        FragmentTemplate t = templates.put(digest, bytes);
        return ResponseEntity.ok(new PlacementTemplate(digest, t.size(), (long) bytes.length));
    }

    @Override
    public ResponseEntity<PlacementTemplate> importMooncakePlacement(
            MooncakePlacementImport request) {
        FragmentTemplate t = mooncake.importRank(request);
        return ResponseEntity.ok(
                new PlacementTemplate(t.digest(), t.size(), (long) t.encoded().length));
    }

    @Override
    public ResponseEntity<Resource> getPlacementTemplate(String digest) {
        byte[] bytes = templates.encoded(digest);
        if (bytes == null) {
            throw RegistryProblems.PLACEMENT_TEMPLATE_UNKNOWN.exception(
                    "no fragment template " + digest + " is stored");
        }
        return EncodedBodies.binary(bytes);
    }

    @Override
    public ResponseEntity<LoaderHeartbeat> heartbeatLoader(String instance) {
        return ResponseEntity.ok(registry.heartbeatLoader(instance));
    }

    @Override
    public ResponseEntity<Loader> getLoader(String instance) {
        return ResponseEntity.ok(registry.getLoader(instance));
    }

    @Override
    public ResponseEntity<Void> deregisterLoader(String instance) {
        registry.deregisterLoader(instance);
        return ResponseEntity.noContent().build();
    }

    @Override
    public ResponseEntity<List<Loader>> listLoaders(
            String model, String group, String after, Integer limit) {
        return ResponseEntity.ok(
                registry.liveLoaders(model, group, after, limit == null ? 100 : limit));
    }
}
