"""Test fakes: fake OpenAI-compatible and Anthropic servers on 127.0.0.1 (see :mod:`fakes.servers`)."""

from fakes.servers import FakeAnthropicServer, FakeModelServer, FakeOpenAIServer, ReceivedImage, RecordedRequest, ScriptedReply

__all__ = ["FakeAnthropicServer", "FakeModelServer", "FakeOpenAIServer", "ReceivedImage", "RecordedRequest", "ScriptedReply"]
