package io.weightrelay.api;

import io.weightrelay.api.control.client.model.RegisterObjectsRequest;
import io.weightrelay.api.control.client.model.RegisteredObject;
import java.util.ArrayList;
import java.util.List;

/**
 * An object a publisher stored, as it registers it with control-api: its key, size, formatted
 * CRC32C and the segment holding it. With {@link #registration} it is the one way a registration of
 * objects is built, for publisher-service and for the publishers the lab's {@code bench
 * control-plane} plays.
 */
public record StoredObject(String key, long size, String checksum, String segment) {

    /**
     * The body of one {@code registerObjects} call: {@code objects}, stored by {@code publisher}.
     */
    public static RegisterObjectsRequest registration(
            String publisher, List<StoredObject> objects) {
        List<RegisteredObject> registered = new ArrayList<>(objects.size());
        for (StoredObject o : objects) {
            registered.add(
                    new RegisteredObject()
                            .key(o.key())
                            .size(o.size())
                            .checksum(o.checksum())
                            .segments(List.of(o.segment())));
        }
        return new RegisterObjectsRequest().publisher(publisher).objects(registered);
    }
}
