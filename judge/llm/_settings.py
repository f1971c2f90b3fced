"""Judge settings: what the caller passes (``JudgeSettings``) and the optional TOML config file.

Precedence: explicit ``JudgeSettings`` fields > the config file's chosen panel > defaults.
Config file errors name the file and the field path (TOML gives no line numbers through tomllib).

Example config::

    default_panel = "main"

    [panels.main]
    judges = ["openai:gpt-4.1-mini", "anthropic:claude-haiku-4-5", "vllm:qwen3-8b"]
    rule = "majority"              # majority | unanimous | weighted
    tie_breaker = "openai:gpt-4.1"
    weights_path = "weights.json"  # relative to this file
    min_votes = 2                  # counted votes needed to decide (default: a majority)

    [providers.openai]
    api_key_env = "OPENAI_API_KEY"
    rpm = 500
    concurrency = 16
    timeout_s = 60

    [providers.vllm]               # an alias of an OpenAI-compatible server
    kind = "openai"
    base_url = "http://localhost:8000/v1"
    batch = false                  # no batch endpoints there: asked live even with --judge-mode batch

    [prices."openai:gpt-4.1-mini"]
    input_per_1m = 0.40
    output_per_1m = 1.60
    batch_input_per_1m = 0.20      # --judge-mode batch; default: half the online price
    batch_output_per_1m = 0.80

    [retry]
    max_attempts = 4
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any, Literal

import platformdirs
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from judge.core import ConfigurationError
from judge.core._errors import field_path

VoteRule = Literal["majority", "unanimous", "weighted"]
JudgeMode = Literal["online", "batch"]  # live requests, or provider batch APIs (see judge.llm._batches)


class JudgeConfigError(ConfigurationError):
    """A judge configuration that cannot work; the message names the file and field."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ProviderConfig(_Strict):
    kind: str | None = None  # openai, anthropic, llamacpp, mock; defaults to the section name
    base_url: str | None = None
    api_key_env: str | None = None
    rpm: float | None = Field(default=None, gt=0)
    concurrency: int | None = Field(default=None, ge=1)
    timeout_s: float | None = Field(default=None, gt=0)
    max_tokens: int = Field(default=1024, ge=16)
    seed: int | None = 0  # sent where the provider supports it
    validation_retries: int = Field(default=1, ge=0, le=5)  # instructor's re-asks after a verdict the schema rejects (read leniently): 1 = asked twice at most
    batch: bool = True  # --judge-mode batch uses the provider's batch API; false: asked live (a server without one)
    # llama.cpp only
    n_ctx: int = Field(default=4096, ge=256)
    n_gpu_layers: int = 0
    chat_format: str | None = None


class RetryConfig(_Strict):
    max_attempts: int = Field(default=4, ge=1, le=20)  # attempts per call, the first included
    base_delay_s: float = Field(default=0.5, ge=0)
    max_delay_s: float = Field(default=30.0, ge=0)
    retry_after_cap_s: float = Field(default=60.0, ge=0)
    jitter: float = Field(default=0.25, ge=0, le=1)  # delay *= 1 + jitter * U(0, 1)


class PriceConfig(_Strict):
    """USD per 1M tokens. The batch prices apply to answers collected from a provider batch
    (``--judge-mode batch``); unset, they are the online prices less ``BATCH_DISCOUNT``."""

    input_per_1m: float = Field(ge=0)
    output_per_1m: float = Field(ge=0)
    batch_input_per_1m: float | None = Field(default=None, ge=0)
    batch_output_per_1m: float | None = Field(default=None, ge=0)


class PanelConfig(_Strict):
    judges: list[str] = Field(default_factory=list)
    rule: VoteRule | None = None
    tie_breaker: str | None = None
    weights_path: Path | None = None
    min_votes: int | None = Field(default=None, ge=1)  # None: a majority of the judges


class ConfigFile(_Strict):
    grading: dict[str, Any] = Field(default_factory=dict)  # the [grading] section is the pipeline's (pipelines.config)
    default_panel: str | None = None
    panels: dict[str, PanelConfig] = Field(default_factory=dict)
    providers: dict[str, ProviderConfig] = Field(default_factory=dict)
    prices: dict[str, PriceConfig] = Field(default_factory=dict)
    retry: RetryConfig = Field(default_factory=RetryConfig)
    concurrency: int | None = Field(default=None, ge=1)
    timeout_s: float | None = Field(default=None, gt=0)


def default_cache_path() -> Path:
    """One cache per user, shared by all runs: a rerun anywhere costs nothing."""
    return Path(platformdirs.user_cache_dir("trajectory-judge")) / "judge-cache.sqlite3"


class JudgeSettings(BaseModel):
    """Everything a run decides about judging. Empty ``judges`` and no config panel: no judges."""

    model_config = ConfigDict(extra="forbid")

    judges: list[str] = Field(default_factory=list)
    config_path: Path | None = None
    panel: str | None = None  # which [panels.<name>] of the config file; its name names the panel
    rule: VoteRule | None = None
    weights_path: Path | None = None
    tie_breaker: str | None = None
    cache_path: Path | None = None
    no_cache: bool = False
    offline: bool = False
    max_cost_usd: float | None = Field(default=None, ge=0)
    concurrency: int | None = Field(default=None, ge=1)  # None: the config file's, else 32
    timeout_s: float | None = Field(default=None, gt=0)  # per request; None: config, else 60
    retry: RetryConfig | None = None
    min_votes: int | None = Field(default=None, ge=1)  # counted votes needed to decide; None: the config's, else a majority
    mode: JudgeMode = "online"  # batch: questions go out as provider batches, answered when the run resumes

    def resolved_cache_path(self) -> Path:
        return self.cache_path or default_cache_path()


def load_config_file(path: Path) -> ConfigFile:
    try:
        raw = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise JudgeConfigError(f"{path}: config file not found") from None
    except tomllib.TOMLDecodeError as exc:
        raise JudgeConfigError(f"{path}: not valid TOML: {exc}") from None
    try:
        config = ConfigFile.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise JudgeConfigError(f"{path}: field {field_path(first['loc'])}: {first['msg']} ({len(exc.errors())} error(s))") from None
    base = Path(path).resolve().parent
    for name, panel in config.panels.items():
        if panel.weights_path is not None and not panel.weights_path.is_absolute():
            config.panels[name] = panel.model_copy(update={"weights_path": base / panel.weights_path})
    return config
