"""Anthropic Messages agents (``tool_use`` / ``tool_result`` content blocks).

Base URL: ``--base-url`` / the provider config's ``base_url``, else ``ANTHROPIC_BASE_URL``, else
api.anthropic.com. The installed anthropic 2.x SDK takes no temperature and no seed on
``messages.create``: none is sent, and reruns are reproduced by the cache (whose key holds the
trial seed, so trials never share an answer). ``max_tokens`` is required by the API (default 4096).
"""

from __future__ import annotations

from typing import Any

from judge import ToolSpec, sanitise_tool_name
from pipelines.runner._conversation import Conversation, ModelReply, ToolCall, ToolResults, UserMessage
from pipelines.runner.agents._base import AgentCallError, AgentModel, as_object, classify, label_text, reply_text, token_count, tool_call

DEFAULT_BASE_URL = "https://api.anthropic.com"
DEFAULT_MAX_TOKENS = 4096


class AnthropicAgent(AgentModel):
    kind = "anthropic"
    base_url_env = "ANTHROPIC_BASE_URL"
    default_base_url = DEFAULT_BASE_URL
    default_key_env = "ANTHROPIC_API_KEY"

    def request(self, conversation: Conversation, tools: list[ToolSpec], seed: int) -> dict[str, Any]:
        messages: list[dict[str, Any]] = []

        def add(role: str, blocks: list[dict[str, Any]]) -> None:
            if messages and messages[-1]["role"] == role:  # the API wants alternating roles: merge
                messages[-1]["content"].extend(blocks)
            else:
                messages.append({"role": role, "content": blocks})

        blocks: list[dict[str, Any]]
        for message in conversation.messages:
            if isinstance(message, UserMessage):
                add("user", [{"type": "text", "text": message.text}])
            elif isinstance(message, ToolResults):
                blocks = []
                for r in message.replies:
                    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": r.call_id, "is_error": r.is_error}
                    if r.content:  # an empty result is a result without content, not an empty text
                        block["content"] = r.content
                    blocks.append(block)
                add("user", blocks)
            else:
                blocks = []
                text = message.text if message.text is not None else message.refusal
                if text:
                    blocks.append({"type": "text", "text": text})
                blocks.extend({"type": "tool_use", "id": c.id, "name": c.name, "input": c.arguments or {}} for c in message.tool_calls)
                if blocks:  # an empty reply has nothing to send back
                    add("assistant", blocks)
        payload: dict[str, Any] = {
            "model": self.model,
            "max_tokens": self.sampling.max_tokens or DEFAULT_MAX_TOKENS,
            "system": conversation.system,
            "messages": messages,
        }
        if tools:
            payload["tools"] = [{"name": sanitise_tool_name(t.name), "description": t.description, "input_schema": t.parameters} for t in tools]
        return payload

    def preload(self) -> None:
        import anthropic.resources.messages  # noqa: F401

    async def send(self, payload: dict[str, Any]) -> dict[str, Any]:
        import anthropic

        if self._client is None:
            self._client = anthropic.AsyncAnthropic(api_key=self.api_key(), base_url=self.base_url, max_retries=0, timeout=self.timeout_s)
        try:
            # The JSON as it came (``messages.create`` would build a model we would only dump again).
            response = await self._client.post("/v1/messages", body=payload, cast_to=object)
        except Exception as exc:
            raise classify(exc, anthropic) from exc
        if not isinstance(response, dict) or not isinstance(response.get("content"), list):
            raise AgentCallError("server", "a response without content")
        return response

    def parse(self, response: dict[str, Any]) -> ModelReply:
        texts: list[str] = []
        calls: list[ToolCall] = []
        for block in response.get("content") or []:
            if not isinstance(block, dict):
                continue  # not a content block: nothing the model said or asked
            if block.get("type") == "text" and block.get("text"):
                texts.append(reply_text(block["text"]) or "")
            elif block.get("type") == "tool_use":
                calls.append(tool_call(block.get("id"), block.get("name") or "", block.get("input"), f"toolu_{len(calls)}"))
        text = "\n".join(texts) or None
        stop = label_text(response.get("stop_reason"))
        usage = as_object(response.get("usage"))
        return ModelReply(
            text=None if stop == "refusal" else text,
            tool_calls=tuple(calls),
            refusal=(text or "refused") if stop == "refusal" else None,
            stop_reason=stop,
            model_version=label_text(response.get("model")),
            input_tokens=token_count(usage.get("input_tokens")),
            output_tokens=token_count(usage.get("output_tokens")),
        )
