package io.weightrelay.control.redis;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.context.SmartLifecycle;
import org.springframework.data.redis.listener.RedisMessageListenerContainer;

/**
 * Starts the pub/sub listener in the background and keeps trying until Redis answers. Once started,
 * the container resubscribes by itself after an outage.
 */
final class ListenerStarter implements SmartLifecycle {

    private static final Logger log = LoggerFactory.getLogger(ListenerStarter.class);

    private final RedisMessageListenerContainer container;
    private final RedisRecoveryProperties recovery;
    private volatile Thread thread;

    ListenerStarter(RedisMessageListenerContainer container, RedisRecoveryProperties recovery) {
        this.container = container;
        this.recovery = recovery;
    }

    @Override
    public synchronized void start() {
        if (thread != null) {
            return;
        }
        thread = new Thread(this::startWhenReachable, "redis-listener-starter");
        thread.setDaemon(true);
        thread.start();
    }

    private void startWhenReachable() {
        long delay = recovery.listenerMinDelay().toMillis();
        while (!Thread.currentThread().isInterrupted()) {
            try {
                container.start();
                return;
            } catch (RuntimeException ex) {
                log.warn("Redis pub/sub not available yet ({}); retrying", ex.getMessage());
                // A failed start leaves the container marked started; reset it so the next
                // attempt really subscribes.
                container.stop();
                try {
                    Thread.sleep(delay);
                } catch (InterruptedException interrupted) {
                    return;
                }
                delay = Math.min(recovery.listenerMaxDelay().toMillis(), delay * 2);
            }
        }
    }

    @Override
    public synchronized void stop() {
        if (thread != null) {
            thread.interrupt();
            thread = null;
        }
        container.stop();
    }

    @Override
    public boolean isRunning() {
        return thread != null;
    }
}
