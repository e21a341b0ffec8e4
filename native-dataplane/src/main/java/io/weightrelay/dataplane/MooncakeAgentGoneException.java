package io.weightrelay.dataplane;

/**
 * The Mooncake agent died, closed its socket or stopped answering while a command was in flight:
 * the message names the agent (pid, socket) and how it ended. Nothing of that command may be
 * assumed done or undone; the agent is started again for the next command.
 */
public final class MooncakeAgentGoneException extends MooncakeAgentException {
    private static final long serialVersionUID = 1L;

    public MooncakeAgentGoneException(String message) {
        super(DataplaneError.PEER_GONE, "AgentGoneError", message);
    }
}
