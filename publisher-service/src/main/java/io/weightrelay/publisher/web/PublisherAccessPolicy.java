package io.weightrelay.publisher.web;

import static io.weightrelay.service.security.Role.LOADER;
import static io.weightrelay.service.security.Role.OPERATOR;
import static io.weightrelay.service.security.Role.OWNER;
import static io.weightrelay.service.security.Role.TRAINER;

import io.weightrelay.service.security.Access;
import io.weightrelay.service.security.AccessRules;
import org.springframework.stereotype.Component;

/**
 * Who may call what. Trainer ranks stage and hand over; the staging path is told only to them.
 * Checkpoint save and restore are owner duties: control-api calls them with the owner credential
 * ({@code relay.checkpoints.owner-token}, one of this publisher's {@code owner} tokens), and no
 * other role may (a trainer or operator token is refused). Status and segment reads are open to the
 * trainer, loader and operator roles; metrics tokens scrape only; anything not listed needs an
 * operator.
 */
@Component
class PublisherAccessPolicy extends AccessRules {

    private static final Access READ = Access.roles(OPERATOR, TRAINER, LOADER);
    private static final Access STAGE = Access.roles(TRAINER);
    private static final Access STAGE_OR_OPERATE = Access.roles(TRAINER, OPERATOR);
    private static final Access OPERATE = Access.roles(OPERATOR);
    private static final Access OWN = Access.roles(OWNER);

    private static final Rule[] RULES = {
        rule("GET", "/api/v1/staging", STAGE_OR_OPERATE),
        rule("POST", "/api/v1/staging/reservations", STAGE),
        rule("DELETE", "/api/v1/staging/reservations/" + SEG, STAGE_OR_OPERATE),
        rule("PUT", GEN, STAGE),
        rule("POST", GEN + "/batches", STAGE),
        rule("POST", GEN + "/finish", STAGE),
        rule("POST", "/api/v1/checkpoints/save", OWN),
        rule("POST", "/api/v1/checkpoints/restore", OWN),
    };

    PublisherAccessPolicy() {
        super(READ, OPERATE, RULES);
    }
}
