"""Test fakes: fake OpenAI-compatible and Anthropic servers on 127.0.0.1 (see :mod:`fakes.servers`)."""

from fakes.servers import (
    BODY_FAULT_COUNTER,
    BODY_FAULTS,
    CONTENT_FAULT_COUNTER,
    CONTENT_FAULTS,
    HOSTILE_FAULTS,
    TRANSPORT_FAULTS,
    FakeAnthropicServer,
    FakeModelServer,
    FakeOpenAIServer,
    FaultSchedule,
    ReceivedImage,
    RecordedRequest,
    ScriptedReply,
)

__all__ = ["BODY_FAULTS", "BODY_FAULT_COUNTER", "CONTENT_FAULTS", "HOSTILE_FAULTS", "CONTENT_FAULT_COUNTER", "TRANSPORT_FAULTS", "FaultSchedule", "FakeAnthropicServer", "FakeModelServer", "FakeOpenAIServer", "ReceivedImage", "RecordedRequest", "ScriptedReply"]
