package io.weightrelay.control.generation;

import io.weightrelay.service.problem.ProblemKind;
import org.springframework.http.HttpStatus;

/** The stable problem types of generations, manifests and leases. */
public final class GenerationProblems {

    public static final ProblemKind MODEL_NOT_FOUND =
            new ProblemKind("model-not-found", HttpStatus.NOT_FOUND, "Unknown model");
    public static final ProblemKind GENERATION_NOT_FOUND =
            new ProblemKind("generation-not-found", HttpStatus.NOT_FOUND, "Unknown generation");
    public static final ProblemKind NO_ACTIVE_GENERATION =
            new ProblemKind(
                    "no-active-generation", HttpStatus.NOT_FOUND, "No generation is active");
    public static final ProblemKind MODEL_MISMATCH =
            new ProblemKind("model-mismatch", HttpStatus.BAD_REQUEST, "Body names another model");
    public static final ProblemKind INVALID_MANIFEST =
            new ProblemKind("invalid-manifest", HttpStatus.BAD_REQUEST, "Invalid manifest");
    public static final ProblemKind INVALID_TOPOLOGY =
            new ProblemKind("invalid-topology", HttpStatus.BAD_REQUEST, "Invalid topology");
    public static final ProblemKind MANIFEST_TOO_LARGE =
            new ProblemKind(
                    "manifest-too-large",
                    HttpStatus.CONTENT_TOO_LARGE,
                    "Manifest has too many objects");
    public static final ProblemKind TRAINER_STEP_CONFLICT =
            new ProblemKind(
                    "trainer-step-conflict",
                    HttpStatus.CONFLICT,
                    "Trainer step already opened with another manifest");
    public static final ProblemKind GENERATION_NOT_OPEN =
            new ProblemKind("generation-not-open", HttpStatus.CONFLICT, "Generation is not open");
    public static final ProblemKind GENERATION_NOT_COMMITTED =
            new ProblemKind(
                    "generation-not-committed",
                    HttpStatus.CONFLICT,
                    "Generation was never committed");
    public static final ProblemKind UNKNOWN_OBJECT =
            new ProblemKind(
                    "unknown-object", HttpStatus.BAD_REQUEST, "Object is not in the manifest");
    public static final ProblemKind OBJECT_SIZE_MISMATCH =
            new ProblemKind(
                    "object-size-mismatch",
                    HttpStatus.BAD_REQUEST,
                    "Object size differs from the manifest");
    public static final ProblemKind OBJECT_CONFLICT =
            new ProblemKind(
                    "object-conflict",
                    HttpStatus.CONFLICT,
                    "Object already registered with another size or checksum");
    public static final ProblemKind GENERATION_INCOMPLETE =
            new ProblemKind(
                    "generation-incomplete",
                    HttpStatus.CONFLICT,
                    "Generation is missing objects or has wrong ones");
    public static final ProblemKind COMMIT_CONFLICT =
            new ProblemKind("commit-conflict", HttpStatus.CONFLICT, "Commit refused");
    public static final ProblemKind GENERATION_NOT_LEASABLE =
            new ProblemKind(
                    "generation-not-leasable",
                    HttpStatus.CONFLICT,
                    "Generation can no longer be leased");

    public static final ProblemKind GENERATION_LOST =
            new ProblemKind(
                    "generation-lost", HttpStatus.CONFLICT, "Generation's stored bytes are gone");

    private GenerationProblems() {}
}
