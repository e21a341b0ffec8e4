package io.weightrelay.control.security;

import static io.weightrelay.service.security.Role.LOADER;
import static io.weightrelay.service.security.Role.OPERATOR;
import static io.weightrelay.service.security.Role.OWNER;
import static io.weightrelay.service.security.Role.TRAINER;

import io.weightrelay.service.security.Access;
import io.weightrelay.service.security.AccessRules;
import java.util.List;
import org.springframework.stereotype.Component;

/**
 * Who may call what. Reads are open to the trainer, loader and operator roles (loaders read plans
 * and generations, trainers read their generations, operators read everything); metrics tokens
 * scrape {@code /actuator/prometheus} only. Writes belong to the role whose process does them:
 * trainers (coordinators and publishers) publish; owners (publishers acting on their own segment)
 * register it with its admin URL (a trainer token may register a segment, but never an admin URL,
 * and never replaces or deregisters a registration an owner token made: {@code RegistryController},
 * {@code register-segment.lua}) and report a generation lost when they re-created the segment that
 * held its objects (a trainer token may not: it would destroy a committed generation); loaders
 * register, lease, resolve plans, prepare and report; operators run maintenance (abort, GC,
 * checkpoints, losses) and may deregister anything; a publisher (trainer token) may collect its
 * model's garbage too, when its segment has no room for the next generation while retired ones no
 * lease holds still fill it. Requests about one segment or one loader instance refuse a token bound
 * to another one (the lease released; and a body's segment, lease holder, reporting instance or
 * session group: {@code GenerationsController}, {@code UpdatesController}, {@code UpdateService}).
 * The operator summaries ({@code /api/v1/operator/**}) are for operators only; the console's static
 * files ({@code /console/**}) are public. Whatever is not listed needs an operator token.
 */
@Component
class ControlAccessPolicy extends AccessRules {

    private static final String ID = "(?<id>[^/]+)";

    private static final Access READ = Access.roles(OPERATOR, TRAINER, LOADER);
    private static final Access PUBLISH = Access.roles(TRAINER);
    private static final Access PUBLISH_OR_OPERATE = Access.roles(TRAINER, OPERATOR);
    private static final Access UPDATE = Access.roles(LOADER);
    private static final Access UPDATE_OR_OPERATE = Access.roles(LOADER, OPERATOR);
    private static final Access OPERATE = Access.roles(OPERATOR);
    private static final Access OWN = Access.roles(OWNER, TRAINER);
    private static final Access OWN_OR_OPERATE = Access.roles(OWNER, TRAINER, OPERATOR);
    private static final Access OWN_SEGMENT_OR_OPERATE = Access.roles(OWNER, OPERATOR);

    /**
     * The console's static page and assets are public: they hold no secret, and every call they
     * make carries the operator token typed into the page.
     */
    private static final List<String> CONSOLE = List.of("/console", "/console/");

    private static final Rule[] RULES = {
        rule("POST", "/api/v1/models/" + SEG + "/generations", PUBLISH),
        rule("POST", GEN + "/objects", PUBLISH),
        rule("POST", GEN + "/commit", PUBLISH),
        rule("POST", GEN + "/abort", PUBLISH_OR_OPERATE),
        rule("POST", GEN + "/lost", OWN_SEGMENT_OR_OPERATE),
        rule("POST", "/api/v1/assignments", PUBLISH),
        rule("POST", GEN + "/leases", UPDATE),
        rule("DELETE", GEN + "/leases/" + ID, UPDATE_OR_OPERATE, "instance"),
        rule("POST", "/api/v1/models/" + SEG + "/gc", PUBLISH_OR_OPERATE),
        rule("PUT", "/api/v1/segments/" + ID, OWN, "segment"),
        rule("POST", "/api/v1/segments/" + ID + "/heartbeat", OWN, "segment"),
        rule("DELETE", "/api/v1/segments/" + ID, OWN_OR_OPERATE, "segment"),
        rule("PUT", "/api/v1/placements/" + SEG, UPDATE),
        rule("POST", "/api/v1/placements/mooncake-3187", UPDATE),
        rule("PUT", "/api/v1/loaders/" + ID, UPDATE, "instance"),
        rule("POST", "/api/v1/loaders/" + ID + "/heartbeat", UPDATE, "instance"),
        rule("DELETE", "/api/v1/loaders/" + ID, UPDATE_OR_OPERATE, "instance"),
        rule("POST", "/api/v1/plans", UPDATE_OR_OPERATE),
        rule("PUT", GEN + "/updates/" + SEG, UPDATE),
        rule("POST", GEN + "/updates/" + SEG + "/reports", UPDATE),
        rule("POST", GEN + "/updates/" + SEG + "/barriers/" + SEG, UPDATE),
        rule("POST", GEN + "/updates/" + SEG + "/preparations", UPDATE),
        rule("POST", GEN + "/checkpoints", OPERATE),
        rule("POST", "/api/v1/models/" + SEG + "/checkpoints/restore", OPERATE),
        // The console's summaries name every loader, segment and session: operators only.
        rule("GET", "/api/v1/operator/.*", OPERATE),
        rule("HEAD", "/api/v1/operator/.*", OPERATE),
    };

    ControlAccessPolicy() {
        super(READ, OPERATE, CONSOLE, RULES);
    }
}
