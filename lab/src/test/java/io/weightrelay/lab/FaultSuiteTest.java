package io.weightrelay.lab;

import static org.assertj.core.api.Assertions.assertThat;

import io.weightrelay.lab.faults.FaultCase;
import io.weightrelay.lab.faults.FaultContext;
import io.weightrelay.lab.faults.FaultResult;
import io.weightrelay.lab.faults.FaultSuite;
import io.weightrelay.lab.faults.SharedLab;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;
import org.springframework.util.FileSystemUtils;

/**
 * The cases of {@code ./relay faults} on the {@code tiny} model, one test per case in the suite's
 * order (the cases share one lab while a fault leaves it usable): real services, real processes
 * killed by signal, every invariant checked by the case itself, and every case that claims to
 * inject mid-update proven to have done so. {@code -Drelay.faults.only=<name>,...} runs only the
 * named cases.
 */
class FaultSuiteTest {

    private static Path work;
    private static FaultContext context;
    private static final List<FaultResult> results = new ArrayList<>();

    @BeforeAll
    static void context() throws Exception {
        work = Files.createTempDirectory("wr-faults-test-");
        context = new FaultContext("tiny", true, work);
    }

    @AfterAll
    static void stop() {
        SharedLab.discard(context);
        System.out.println(FaultSuite.summary("tiny", results, 0));
        FileSystemUtils.deleteRecursively(work.toFile());
    }

    @TestFactory
    Stream<DynamicTest> everyCasePasses() {
        List<FaultCase> cases = FaultSuite.cases();
        // -Drelay.faults.only=a,b runs the named cases alone (an unknown name fails, listing all)
        String only = System.getProperty("relay.faults.only", "").strip();
        if (!only.isEmpty()) {
            cases = FaultSuite.only(cases, new LinkedHashSet<>(Arrays.asList(only.split(","))));
        }
        assertThat(cases).isNotEmpty();
        return cases.stream()
                .map(
                        c ->
                                DynamicTest.dynamicTest(
                                        c.name(),
                                        () -> {
                                            FaultResult r = c.run(context);
                                            results.add(r);
                                            System.out.println(
                                                    (r.passed() ? "PASS " : "FAIL ")
                                                            + r.name()
                                                            + " "
                                                            + r.seconds()
                                                            + " s: "
                                                            + r.detail());
                                            assertThat(r.passed()).as(r.detail()).isTrue();
                                            assertThat(r.corruptedServed()).isZero();
                                            assertThat(r.partialServed()).isZero();
                                            assertThat(r.lostCommitted()).isZero();
                                            // A case that says it injects mid-update proved it
                                            // did: its fault landed before the update ended.
                                            assertThat(r.claimsMidUpdate())
                                                    .as("%s claims mid-update", c.name())
                                                    .isEqualTo(c.claimsMidUpdate());
                                            if (c.claimsMidUpdate()) {
                                                assertThat(r.provedMidUpdate())
                                                        .as(
                                                                "%s's fault landed mid-update",
                                                                c.name())
                                                        .isTrue();
                                            }
                                        }));
    }
}
