package io.weightrelay.dataplane;

/**
 * The Mooncake agent (the {@code weight_relay.mooncake_agent} process that drives the real Mooncake
 * for this engine) refused to start or broke its protocol: {@link #agentError()} is the agent's own
 * error type ({@code MooncakeVersionError}, {@code MooncakeAddressError}, {@code
 * MooncakeSetupError}, {@code AgentProtocolError}, ...).
 */
public class MooncakeAgentException extends DataplaneException {
    private static final long serialVersionUID = 1L;

    private final String agentError;

    public MooncakeAgentException(DataplaneError error, String agentError, String message) {
        super(error, agentError, message);
        this.agentError = agentError;
    }

    /** The agent's error type name. */
    public String agentError() {
        return agentError;
    }
}
