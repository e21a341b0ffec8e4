package io.weightrelay.control.security;

import static io.weightrelay.service.security.Role.LOADER;
import static io.weightrelay.service.security.Role.OPERATOR;
import static io.weightrelay.service.security.Role.TRAINER;

import io.weightrelay.service.security.Access;
import io.weightrelay.service.security.AccessRules;
import org.springframework.stereotype.Component;

/**
 * Who may call what. Reads are open to every role (loaders read plans and generations, trainers
 * read their generations, operators read everything). Writes belong to the role whose process does
 * them: trainers (coordinators and publishers, which also own segments) publish; loaders register,
 * lease, resolve plans and report; operators run maintenance (abort, GC, checkpoints) and may
 * deregister anything. Whatever is not listed needs an operator token.
 */
@Component
class ControlAccessPolicy extends AccessRules {

    private static final String SEG = "[^/]+";
    private static final String GEN = "/api/v1/models/" + SEG + "/generations/" + SEG;

    private static final Access READ = Access.roles(OPERATOR, TRAINER, LOADER);
    private static final Access PUBLISH = Access.roles(TRAINER);
    private static final Access PUBLISH_OR_OPERATE = Access.roles(TRAINER, OPERATOR);
    private static final Access UPDATE = Access.roles(LOADER);
    private static final Access UPDATE_OR_OPERATE = Access.roles(LOADER, OPERATOR);
    private static final Access OPERATE = Access.roles(OPERATOR);

    private static final Rule[] RULES = {
        rule("POST", "/api/v1/models/" + SEG + "/generations", PUBLISH),
        rule("POST", GEN + "/objects", PUBLISH),
        rule("POST", GEN + "/commit", PUBLISH),
        rule("POST", GEN + "/abort", PUBLISH_OR_OPERATE),
        rule("POST", "/api/v1/assignments", PUBLISH),
        rule("POST", GEN + "/leases", UPDATE),
        rule("DELETE", GEN + "/leases/" + SEG, UPDATE_OR_OPERATE),
        rule("POST", "/api/v1/models/" + SEG + "/gc", OPERATE),
        rule("PUT", "/api/v1/segments/" + SEG, PUBLISH),
        rule("POST", "/api/v1/segments/" + SEG + "/heartbeat", PUBLISH),
        rule("DELETE", "/api/v1/segments/" + SEG, PUBLISH_OR_OPERATE),
        rule("PUT", "/api/v1/placements/" + SEG, UPDATE),
        rule("PUT", "/api/v1/loaders/" + SEG, UPDATE),
        rule("POST", "/api/v1/loaders/" + SEG + "/heartbeat", UPDATE),
        rule("DELETE", "/api/v1/loaders/" + SEG, UPDATE_OR_OPERATE),
        rule("POST", "/api/v1/plans", UPDATE_OR_OPERATE),
        rule("PUT", GEN + "/updates/" + SEG, UPDATE),
        rule("POST", GEN + "/updates/" + SEG + "/reports", UPDATE),
        rule("POST", GEN + "/checkpoints", OPERATE),
        rule("POST", "/api/v1/models/" + SEG + "/checkpoints/restore", OPERATE),
    };

    ControlAccessPolicy() {
        super(READ, OPERATE, RULES);
    }
}
