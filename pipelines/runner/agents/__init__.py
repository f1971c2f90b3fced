"""Agent models, one module per provider, behind a registry keyed by the ``provider:`` prefix.

An agent is named ``provider:model`` (``openai:gpt-4.1-mini``, ``anthropic:claude-haiku-4-5``).
The prefix is a provider kind or an alias from the config file's ``[providers.<alias>]`` with
``kind = "openai"`` (the same section the judges read), so an OpenAI-compatible server can be named.
"""

from __future__ import annotations

from judge.llm import ProviderConfig
from pipelines.runner.agents._base import AgentCallError, AgentConfigError, AgentModel, Sampling, parse_arguments
from pipelines.runner.agents.anthropic import AnthropicAgent
from pipelines.runner.agents.openai import OpenAIAgent

AGENT_KINDS: dict[str, type[AgentModel]] = {"openai": OpenAIAgent, "anthropic": AnthropicAgent}


def parse_agent_name(name: str) -> tuple[str, str]:
    provider, sep, model = name.partition(":")
    if not sep or not provider or not model:
        raise AgentConfigError(f"agent {name!r}: expected 'provider:model', e.g. 'openai:gpt-4.1-mini'")
    return provider, model


def create_agent(name: str, providers: dict[str, ProviderConfig], sampling: Sampling, base_url: str | None = None) -> AgentModel:
    """The agent for ``provider:model``; ``base_url`` (``--base-url``) overrides the config's."""
    provider, model = parse_agent_name(name)
    config = providers.get(provider) or ProviderConfig()
    kind = config.kind or provider
    cls = AGENT_KINDS.get(kind)
    if cls is None:
        raise AgentConfigError(
            f"agent {name!r}: unknown provider {provider!r}; known kinds: {', '.join(sorted(AGENT_KINDS))} "
            "(or define [providers.<alias>] kind = ... in the config file)"
        )
    if base_url is not None:
        config = config.model_copy(update={"base_url": base_url})
    return cls(provider, model, config, sampling)


__all__ = [
    "AGENT_KINDS",
    "AgentCallError",
    "AgentConfigError",
    "AgentModel",
    "AnthropicAgent",
    "OpenAIAgent",
    "Sampling",
    "create_agent",
    "parse_agent_name",
    "parse_arguments",
]
