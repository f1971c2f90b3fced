"""OpenAI Chat Completions agents, and any OpenAI-compatible server (vLLM, Ollama, llama.cpp server).

Base URL: ``--base-url`` / the provider config's ``base_url``, else ``OPENAI_BASE_URL``, else
api.openai.com. Key: the variable named by ``api_key_env`` (default ``OPENAI_API_KEY``); a
non-default base URL without a key gets a placeholder. A request declares at most 128 tools
(OpenAI's limit); the runner shortlists above that.
"""

from __future__ import annotations

from typing import Any

from judge import ToolSpec, sanitise_tool_name
from pipelines.runner._conversation import Conversation, ModelReply, ToolResults, UserMessage
from pipelines.runner.agents._base import AgentCallError, AgentModel, as_object, classify, label_text, reply_text, token_count, tool_call

DEFAULT_BASE_URL = "https://api.openai.com/v1"


class OpenAIAgent(AgentModel):
    kind = "openai"
    base_url_env = "OPENAI_BASE_URL"
    default_base_url = DEFAULT_BASE_URL
    default_key_env = "OPENAI_API_KEY"
    max_tools = 128

    def request(self, conversation: Conversation, tools: list[ToolSpec], seed: int) -> dict[str, Any]:
        messages: list[dict[str, Any]] = [{"role": "system", "content": conversation.system}]
        for message in conversation.messages:
            if isinstance(message, UserMessage):
                messages.append({"role": "user", "content": message.text})
            elif isinstance(message, ToolResults):
                messages.extend({"role": "tool", "tool_call_id": r.call_id, "content": r.content} for r in message.replies)
            else:
                text = message.text if message.text is not None else message.refusal
                entry: dict[str, Any] = {"role": "assistant", "content": text if text is not None or message.tool_calls else ""}
                if message.tool_calls:
                    entry["tool_calls"] = [
                        {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.raw_arguments}} for c in message.tool_calls
                    ]
                messages.append(entry)
        payload: dict[str, Any] = {"model": self.model, "messages": messages, "seed": seed}
        if tools:
            payload["tools"] = [
                {"type": "function", "function": {"name": sanitise_tool_name(t.name), "description": t.description, "parameters": t.parameters}} for t in tools
            ]
        if self.sampling.temperature is not None:
            payload["temperature"] = self.sampling.temperature
        if self.sampling.max_tokens is not None:
            payload["max_completion_tokens"] = self.sampling.max_tokens
        return payload

    def preload(self) -> None:
        import openai.resources.chat.completions  # noqa: F401

    async def send(self, payload: dict[str, Any]) -> dict[str, Any]:
        import openai

        if self._client is None:
            self._client = openai.AsyncOpenAI(api_key=self.api_key(), base_url=self.base_url, max_retries=0, timeout=self.timeout_s)
        try:
            # Not ``chat.completions.create``: it first walks the whole payload through the SDK's
            # typed-param transform (~20 ms of CPU per request once a conversation declares a domain's
            # tools; an identity for plain JSON like ours) and builds a response model we would only
            # dump again. ``post`` keeps the SDK's client, auth, timeouts and error types.
            response = await self._client.post("/chat/completions", body=payload, cast_to=object, options={"security": {"bearer_auth": True}})
        except Exception as exc:
            raise classify(exc, openai) from exc
        if not isinstance(response, dict) or not response.get("choices"):
            raise AgentCallError("server", "a response without choices")
        return response

    def parse(self, response: dict[str, Any]) -> ModelReply:
        """Liberal in shapes (see ``reply_text`` / ``tool_call``); a response with no message
        object at all raises, and the caller retries it as unreadable."""
        choice = response["choices"][0]
        message = choice["message"] if choice.get("message") is not None else {}
        if not isinstance(message, dict):
            raise ValueError(f"a message that is a JSON {type(message).__name__}, not an object")
        requested = message.get("tool_calls") or []
        if isinstance(requested, dict):  # one call, not wrapped in a list
            requested = [requested]
        if not isinstance(requested, list):
            raise ValueError(f"tool_calls that is a JSON {type(requested).__name__}, not a list")
        calls = []
        for i, call in enumerate(requested):
            call = as_object(call)
            function = as_object(call.get("function"))
            calls.append(tool_call(call.get("id"), function.get("name") or "", function.get("arguments"), f"call_{i}"))
        usage = as_object(response.get("usage"))
        return ModelReply(
            text=reply_text(message.get("content")),
            tool_calls=tuple(calls),
            refusal=reply_text(message.get("refusal")),
            stop_reason=label_text(choice.get("finish_reason")),
            model_version=label_text(response.get("model")),
            input_tokens=token_count(usage.get("prompt_tokens")),
            output_tokens=token_count(usage.get("completion_tokens")),
        )
