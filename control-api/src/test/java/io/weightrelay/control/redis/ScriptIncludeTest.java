package io.weightrelay.control.redis;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * A rule several scripts apply is written once under {@code scripts/lib/} and put where each script
 * says {@code --@include}: what Redis runs holds the rule, and never the include line.
 */
class ScriptIncludeTest {

    @Test
    void everyScriptThatJudgesAnExpiryRunsTheOneLiveAfterRule() {
        for (String name : List.of("live-after", "heartbeat-loader", "update-step")) {
            String text = ScriptCall.load(name).getScriptAsString();
            assertThat(text)
                    .as(name)
                    .doesNotContain("--@include")
                    .containsOnlyOnce("local function live_after(")
                    .contains("live_after(now, ");
        }
    }

    @Test
    void aScriptWithoutAnIncludeIsRunAsWritten() {
        assertThat(ScriptCall.load("tick").getScriptAsString())
                .doesNotContain("live_after")
                .startsWith("--");
    }
}
