"""Test fakes: fake OpenAI-compatible and Anthropic servers on 127.0.0.1 (see :mod:`fakes.servers`)."""

from fakes.servers import (
    CONTENT_FAULT_COUNTER,
    CONTENT_FAULTS,
    HOSTILE_FAULTS,
    BROKEN_REPLY_COUNTER,
    TRANSPORT_FAULTS,
    FakeAnthropicServer,
    FakeModelServer,
    FakeOpenAIServer,
    FaultSchedule,
    ReceivedImage,
    RecordedRequest,
    ScriptedReply,
)

__all__ = ["BROKEN_REPLY_COUNTER", "CONTENT_FAULTS", "HOSTILE_FAULTS", "CONTENT_FAULT_COUNTER", "TRANSPORT_FAULTS", "FaultSchedule", "FakeAnthropicServer", "FakeModelServer", "FakeOpenAIServer", "ReceivedImage", "RecordedRequest", "ScriptedReply"]
