/**
 * The Redis tests use ({@link io.weightrelay.testkit.redis.RedisTestSupport}): where it is, a key
 * prefix of each test's own, and the one way to delete that prefix's keys afterwards. Its
 * Testcontainers and Spring parts are optional dependencies that only the services' tests have.
 */
package io.weightrelay.testkit.redis;
