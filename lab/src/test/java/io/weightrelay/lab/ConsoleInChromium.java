package io.weightrelay.lab;

import static org.assertj.core.api.Assertions.assertThat;

import io.weightrelay.api.control.client.model.SessionState;
import io.weightrelay.lab.cluster.LabCluster;
import io.weightrelay.lab.rollout.RolloutEngine;
import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.stream.Stream;
import org.openqa.selenium.By;
import org.openqa.selenium.JavascriptExecutor;
import org.openqa.selenium.OutputType;
import org.openqa.selenium.WebDriver;
import org.openqa.selenium.WebElement;
import org.openqa.selenium.chrome.ChromeDriver;
import org.openqa.selenium.chrome.ChromeDriverService;
import org.openqa.selenium.chrome.ChromeOptions;
import org.openqa.selenium.support.ui.ExpectedConditions;
import org.openqa.selenium.support.ui.WebDriverWait;
import org.springframework.util.FileSystemUtils;

/**
 * Drives control-api's operator console ({@code /console}) in headless Chromium (Debian's {@code
 * chromium} and {@code chromium-driver}, found on the PATH) against a running lab, as an operator
 * would: a wrong token is refused on the page, the operator token signs in, and the live page shows
 * the generation the lab committed as active, the lab's finished update session with every loader
 * done, every loader and segment owner, and the plan's load per NIC. Saves a screenshot.
 */
final class ConsoleInChromium {

    /** Where the screenshot goes, relative to the lab module (surefire's working directory). */
    static final Path SCREENSHOT = Path.of("target", "console.png");

    private static final Duration WAIT = Duration.ofSeconds(30);

    private ConsoleInChromium() {}

    static void showsTheLab(LabCluster lab, long committed, String group) throws IOException {
        assertThat(lab.session(committed, group).getState())
                .as("control-api's own answer for the session the page must show")
                .isEqualTo(SessionState.DONE);
        Path profile = Files.createTempDirectory("wr-console-chromium");
        ChromeDriverService service =
                new ChromeDriverService.Builder()
                        .usingDriverExecutable(executable("chromedriver").toFile())
                        .usingAnyFreePort()
                        .build();
        ChromeOptions options = new ChromeOptions();
        options.setBinary(executable("chromium").toFile());
        options.addArguments(
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--disable-dev-shm-usage",
                "--window-size=1400,2200",
                "--user-data-dir=" + profile);
        WebDriver driver = new ChromeDriver(service, options);
        try {
            drive(driver, lab, committed, group);
        } finally {
            driver.quit();
            FileSystemUtils.deleteRecursively(profile);
        }
    }

    private static void drive(WebDriver driver, LabCluster lab, long committed, String group)
            throws IOException {
        WebDriverWait wait = new WebDriverWait(driver, WAIT);
        driver.get(lab.controlUrl() + "/console");
        assertThat(driver.getCurrentUrl()).endsWith("/console/");

        signIn(driver, "not-a-token-of-this-lab");
        WebElement error =
                wait.until(ExpectedConditions.visibilityOfElementLocated(By.id("login-error")));
        wait.until(d -> !error.getText().isEmpty());
        assertThat(error.getText()).contains("401");
        assertThat(driver.findElement(By.id("console-view")).isDisplayed()).isFalse();

        signIn(driver, lab.operatorToken());
        String model = lab.spec().model();
        WebElement generation =
                wait.until(
                        ExpectedConditions.presenceOfElementLocated(
                                By.cssSelector(
                                        "#generations tr[data-model='"
                                                + model
                                                + "'][data-generation='"
                                                + committed
                                                + "']")));
        assertThat(generation.getAttribute("data-state")).isEqualTo("ACTIVE");
        assertThat(generation.getAttribute("data-active")).isEqualTo("true");
        assertThat(generation.getText()).contains("ACTIVE").contains("(active)");

        WebElement session =
                wait.until(
                        ExpectedConditions.presenceOfElementLocated(
                                By.cssSelector(
                                        ".session[data-model='"
                                                + model
                                                + "'][data-generation='"
                                                + committed
                                                + "'][data-group='"
                                                + group
                                                + "']")));
        assertThat(session.getAttribute("data-state")).isEqualTo("DONE");
        List<String> instances = lab.engines().stream().map(RolloutEngine::instance).toList();
        List<WebElement> participants = session.findElements(By.cssSelector("tr[data-instance]"));
        assertThat(participants)
                .extracting(p -> p.getAttribute("data-instance"))
                .containsExactlyInAnyOrderElementsOf(instances);
        assertThat(participants)
                .allSatisfy(p -> assertThat(p.getAttribute("data-phase")).isEqualTo("DONE"));
        long readers = 0;
        for (WebElement p : participants) {
            WebElement read = p.findElement(By.cssSelector(".bar.read"));
            assertThat(read.getAttribute("aria-valuenow"))
                    .as("%s read all its plan slice reads", p.getAttribute("data-instance"))
                    .isEqualTo(read.getAttribute("aria-valuemax"));
            if (Long.parseLong(read.getAttribute("aria-valuemax")) > 0) {
                readers++;
            }
        }
        assertThat(readers).as("loaders whose plan slice reads from the store").isPositive();

        assertThat(
                        driver.findElements(By.cssSelector("#loaders tr[data-instance]")).stream()
                                .map(r -> r.getAttribute("data-instance")))
                .containsAll(instances);
        List<WebElement> segments =
                driver.findElements(By.cssSelector("#segments tr[data-segment]"));
        assertThat(segments).hasSize(2);
        for (WebElement s : segments) {
            assertThat(
                            Long.parseLong(
                                    s.findElement(By.cssSelector(".bar.fill"))
                                            .getAttribute("aria-valuenow")))
                    .as("bytes stored in %s", s.getAttribute("data-segment"))
                    .isPositive();
        }
        wait.until(
                ExpectedConditions.presenceOfElementLocated(
                        By.cssSelector("#nic-chart .track[data-node]")));
        assertThat(driver.findElements(By.cssSelector("#nic-chart .track span.read")))
                .as("a bar per rollout NIC")
                .isNotEmpty();
        assertThat(driver.findElement(By.id("nic-caption")).getText()).contains("max / mean");
        assertThat(driver.findElement(By.id("status")).getText()).startsWith("live");

        Files.createDirectories(SCREENSHOT.getParent());
        byte[] png =
                ((org.openqa.selenium.TakesScreenshot) driver).getScreenshotAs(OutputType.BYTES);
        Files.write(SCREENSHOT, png);
        assertThat(png.length).isGreaterThan(10_000);

        driver.findElement(By.id("logout")).click();
        wait.until(ExpectedConditions.visibilityOfElementLocated(By.id("login-view")));
        assertThat(
                        ((JavascriptExecutor) driver)
                                .executeScript(
                                        "return window.sessionStorage.getItem('wr.console.token')"))
                .as("the token is gone from the tab after signing out")
                .isNull();
    }

    private static void signIn(WebDriver driver, String token) {
        WebElement field = driver.findElement(By.id("login-token"));
        field.clear();
        field.sendKeys(token);
        driver.findElement(By.id("login-submit")).click();
    }

    /** An executable on the PATH, or a failure saying what to install. */
    private static Path executable(String name) {
        Optional<Path> found =
                Stream.of(System.getenv().getOrDefault("PATH", "").split(File.pathSeparator))
                        .filter(dir -> !dir.isEmpty())
                        .map(dir -> Path.of(dir, name))
                        .filter(Files::isExecutable)
                        .findFirst();
        return found.orElseThrow(
                () ->
                        new IllegalStateException(
                                name
                                        + " is not on the PATH: the console test needs Debian's"
                                        + " chromium and chromium-driver (apt-get install -y"
                                        + " chromium chromium-driver; .ci/run installs them)"));
    }
}
