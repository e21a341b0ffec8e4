package io.weightrelay.loader.web;

import io.weightrelay.api.loader.model.DirectInstall;
import io.weightrelay.api.loader.model.InstanceRegistration;
import io.weightrelay.api.loader.model.InstanceStatus;
import io.weightrelay.api.loader.model.PlacedBuffer;
import io.weightrelay.api.loader.model.RegistrationState;
import io.weightrelay.api.loader.server.InstanceApi;
import io.weightrelay.dataplane.Segment;
import io.weightrelay.loader.instance.DataplaneHolder;
import io.weightrelay.loader.instance.Instance;
import io.weightrelay.loader.instance.InstanceService;
import io.weightrelay.loader.pipeline.BufferDirectory;
import io.weightrelay.loader.registration.RegistrationManager;
import io.weightrelay.loader.registration.ServingCopies;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.RestController;

/** The engine registers its workers and buffers, reads them back, and tears down. */
@RestController
record InstanceController(InstanceService instances, DataplaneHolder dataplane)
        implements InstanceApi {

    @Override
    public ResponseEntity<InstanceStatus> registerInstance(InstanceRegistration registration) {
        return ResponseEntity.ok(status(instances.register(registration)));
    }

    @Override
    public ResponseEntity<InstanceStatus> getInstance() {
        return ResponseEntity.ok(status(instances.require()));
    }

    @Override
    public ResponseEntity<Void> teardownInstance() {
        instances.teardown();
        return ResponseEntity.noContent().build();
    }

    private InstanceStatus status(Instance instance) {
        Map<String, RegistrationManager.Snapshot> registered = new HashMap<>();
        RegistrationManager<Segment> registrations = dataplane.registrations();
        if (registrations != null) {
            for (RegistrationManager.Snapshot s : registrations.snapshot()) {
                if (s.key().instance().equals(instance.instanceId())
                        && s.key().epoch() == instance.epoch()) {
                    registered.put(s.key().base(), s);
                }
            }
        }
        BufferDirectory directory = new BufferDirectory(instance.buffers());
        List<PlacedBuffer> buffers = new ArrayList<>();
        Set<String> staged = instance.staged() ? Set.copyOf(instance.directWorkerIds()) : Set.of();
        long stagedBytes = 0;
        for (String worker : instance.workerIds()) {
            if (staged.contains(worker)) {
                for (long size : directory.segmentsOf(worker).values()) {
                    stagedBytes += size;
                }
            }
            for (BufferDirectory.Placed p : directory.buffers(worker)) {
                RegistrationManager.Snapshot s = registered.get(p.segment());
                PlacedBuffer out =
                        new PlacedBuffer(
                                worker,
                                p.bufferId(),
                                p.segment(),
                                p.base(),
                                p.size(),
                                s == null
                                        ? RegistrationState.UNREGISTERED
                                        : RegistrationState.fromValue(s.state().name()));
                // a buffer in the worker's own Transfer Engine has no file: the worker holds it
                if (s != null && directory.foreign(p.segment()) == null) {
                    Segment segment = registrations.find(s.key());
                    if (segment != null) {
                        out.setShmPath(segment.shmPath().toString());
                        out.setServingShmPath(
                                (staged.contains(worker)
                                                ? ServingCopies.of(segment.shmPath())
                                                : segment.shmPath())
                                        .toString());
                    }
                }
                buffers.add(out);
            }
        }
        return new InstanceStatus(
                        instance.instanceId(),
                        instance.model(),
                        instance.group(),
                        instance.node(),
                        instance.epoch(),
                        instance.workers())
                .generation(instance.generation())
                .paused(instance.paused())
                .directInstall(instance.staged() ? DirectInstall.STAGED : DirectInstall.IN_PLACE)
                .stagedBytes(stagedBytes)
                .span(instance.span())
                .buffers(buffers);
    }
}
