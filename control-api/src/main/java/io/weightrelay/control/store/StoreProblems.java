package io.weightrelay.control.store;

import io.weightrelay.service.problem.ProblemKind;
import org.springframework.http.HttpStatus;

/** Problem kinds of the object store. */
public final class StoreProblems {

    public static final ProblemKind STORE_UNAVAILABLE =
            new ProblemKind(
                    "store-unavailable",
                    HttpStatus.SERVICE_UNAVAILABLE,
                    "Object store unavailable");

    private StoreProblems() {}
}
