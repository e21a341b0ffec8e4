package io.weightrelay.control.registry;

import io.weightrelay.api.control.model.Loader;
import io.weightrelay.api.control.model.LoaderRegistration;
import io.weightrelay.api.control.model.SegmentOwner;
import io.weightrelay.api.control.model.SegmentRegistration;
import io.weightrelay.api.control.server.RegistryApi;
import java.util.List;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.RestController;

@RestController
class RegistryController implements RegistryApi {

    private final Registry registry;

    RegistryController(Registry registry) {
        this.registry = registry;
    }

    @Override
    public ResponseEntity<SegmentOwner> registerSegment(
            String segment, SegmentRegistration registration) {
        return ResponseEntity.ok(registry.registerSegment(segment, registration));
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
    public ResponseEntity<Loader> heartbeatLoader(String instance) {
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
    public ResponseEntity<List<Loader>> listLoaders(String model, String group) {
        return ResponseEntity.ok(registry.liveLoaders(model, group));
    }
}
