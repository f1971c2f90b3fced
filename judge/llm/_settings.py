"""Judge settings: what the caller passes (``JudgeSettings``) and the optional TOML config file.

Precedence: explicit ``JudgeSettings`` fields > the config file's chosen panel > defaults.
Config file errors name the file and the field path (TOML gives no line numbers through tomllib).

Defaults that fit the provider (``ProviderDefaults``, chosen by the judge's client: ``defaults``).
A hosted API answers many calls at once within a minute; a model on this machine answers one or
two at a time, each in seconds to minutes, so hosted defaults starve it into timeouts and retries
that only queue behind the call they gave up on. Where nothing is set, a judge starts with:

=====================================================  ===========  =========  ==========================
provider                                               concurrency  timeout    attempts (first included)
=====================================================  ===========  =========  ==========================
hosted (any other base URL)                            32 (run's)   60 s       4, 0.5 s doubling to 30 s
local server (base URL on localhost, 127.x, ::1)       2            600 s      3, 10 s doubling to 60 s
in-process ``llamacpp:``                               1            600 s      1 (a local model is never
                                                                               retried: nothing transient)
=====================================================  ===========  =========  ==========================

Anything set explicitly wins, value by value: a provider's own ``[providers.<name>]``
``concurrency`` / ``timeout_s`` / ``[providers.<name>.retry]`` keys, else the run's
(``JudgeSettings``, the config file's top-level ``concurrency`` / ``timeout_s`` and ``[retry]``
keys), else the provider's default (``layered_retry``: a section setting only ``max_attempts``
keeps the rest). A run-wide ``concurrency`` set explicitly is the only limit (no provider default
is added under it).

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
    concurrency = 8                # a local server starts at 2, 600 s, 3 attempts (the table above)
    [providers.vllm.retry]         # this provider's own retries (else [retry], else its default)
    max_attempts = 2

    [prices."openai:gpt-4.1-mini"]
    input_per_1m = 0.40
    output_per_1m = 1.60
    batch_input_per_1m = 0.20      # --judge-mode batch; default: half the online price
    batch_output_per_1m = 0.80

    [retry]                        # every judge's whose provider sets none (a local one's too)
    max_attempts = 4
"""

from __future__ import annotations

import ipaddress
import tomllib
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

import msgspec
import platformdirs
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from judge.core import ConfigurationError
from judge.core._errors import field_path

VoteRule = Literal["majority", "unanimous", "weighted"]
JudgeMode = Literal["online", "batch"]  # live requests, or provider batch APIs (see judge.llm._batches)


class JudgeConfigError(ConfigurationError):
    """A judge configuration that cannot work; the message names the file and field."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class RetryConfig(_Strict):
    max_attempts: int = Field(default=4, ge=1, le=20)  # attempts per call, the first included
    base_delay_s: float = Field(default=0.5, ge=0)
    max_delay_s: float = Field(default=30.0, ge=0)
    retry_after_cap_s: float = Field(default=60.0, ge=0)
    jitter: float = Field(default=0.25, ge=0, le=1)  # delay *= 1 + jitter * U(0, 1)


def layered_retry(*layers: RetryConfig | None) -> RetryConfig:
    """Each retry setting from the first of ``layers`` that sets it explicitly, else its default:
    ``[providers.x.retry] max_attempts = 2`` on a local server keeps the server's spacing."""
    values: dict[str, Any] = {}
    for layer in reversed([layer for layer in layers if layer is not None]):
        values.update({name: getattr(layer, name) for name in layer.model_fields_set})
    return RetryConfig(**values)


def check_base_url(url: str, setting: str) -> str:
    """``url`` if it can be a provider's base URL (http or https, a host, a port in range, no
    whitespace or control character anywhere), else a ``JudgeConfigError`` naming ``setting`` (where
    it was set: ``OPENAI_BASE_URL``, ``[providers.vllm] base_url``) and the value as written. Checked
    when a judge is built, so a bad URL stops the run before grading instead of every call failing
    ("Connection error.") or the run dying at its end (httpx's ``InvalidURL`` on a trailing newline)."""
    problem = None
    if any(ch.isspace() or ord(ch) < 32 or ord(ch) == 127 for ch in url):
        problem = "it holds whitespace or a control character (a trailing newline?)"
    else:
        try:
            parts = urlsplit(url)
            port = parts.port  # a port out of 0-65535, or not a number, raises here
        except ValueError as exc:
            problem = str(exc)
        else:
            if parts.scheme not in ("http", "https"):
                problem = "it must start with http:// or https://" + (f" (not {parts.scheme}://)" if parts.scheme and parts.netloc else "")
            elif not parts.hostname:
                problem = "it names no host"
            elif port == 0:
                problem = "port 0 is no server's port"
    if problem is not None:
        raise JudgeConfigError(f"{setting}: {url!r} is not a usable base URL: {problem}")
    return url


class ProviderConfig(_Strict):
    kind: str | None = None  # openai, anthropic, llamacpp, mock; defaults to the section name
    base_url: str | None = None
    api_key_env: str | None = None
    rpm: float | None = Field(default=None, gt=0)
    concurrency: int | None = Field(default=None, ge=1)  # None: the run's, else the provider's default (ProviderDefaults)
    timeout_s: float | None = Field(default=None, gt=0)  # per request; None: the run's, else the provider's default
    retry: RetryConfig | None = None  # [providers.<name>.retry]; None: the run's [retry], else the provider's default
    max_tokens: int = Field(default=1024, ge=16)
    seed: int | None = 0  # sent where the provider supports it
    validation_retries: int = Field(default=1, ge=0, le=5)  # instructor's re-asks after a verdict the schema rejects (read leniently): 1 = asked twice at most
    batch: bool = True  # --judge-mode batch uses the provider's batch API; false: asked live (a server without one)
    # llama.cpp only
    n_ctx: int = Field(default=4096, ge=256)
    n_gpu_layers: int = 0
    chat_format: str | None = None

    @field_validator("base_url")
    @classmethod
    def _usable_base_url(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                check_base_url(value, "base_url")
            except JudgeConfigError as exc:  # pydantic names the field (providers.<name>.base_url) and the file
                raise ValueError(str(exc).removeprefix("base_url: ")) from None
        return value


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


DEFAULT_CONCURRENCY = 32  # calls in flight over the whole run when nothing is set


class ProviderDefaults(msgspec.Struct, frozen=True):
    """What a judge starts with where nothing is set (the module docstring's table).
    ``concurrency``: calls in flight to the provider (None: only the run's limit); ``retry``:
    None keeps the run's retry settings."""

    where: str  # hosted, local server, in-process: said in the run's notes
    concurrency: int | None
    timeout_s: float
    retry: RetryConfig | None

    def describe(self) -> str:
        attempts = "the run's attempts" if self.retry is None else f"{self.retry.max_attempts} attempt(s)"
        if self.retry is not None and self.retry.max_attempts > 1:
            attempts += f" {self.retry.base_delay_s:g} s doubling to {self.retry.max_delay_s:g} s apart"
        limit = "the run's concurrency" if self.concurrency is None else f"concurrency {self.concurrency}"
        return f"{limit}, {self.timeout_s:g} s per request, {attempts}"


HOSTED = ProviderDefaults("hosted", concurrency=None, timeout_s=60.0, retry=None)
# A single-slot server queues: two in flight keep it busy without one waiting out its deadline
# behind the other; a busy answer (503) or a timeout is retried twice, 10 then 20 s on.
LOCAL_SERVER = ProviderDefaults(
    "local server", concurrency=2, timeout_s=600.0, retry=RetryConfig(max_attempts=3, base_delay_s=10.0, max_delay_s=60.0, retry_after_cap_s=120.0)
)
# One model in this process answers one call at a time (llama.cpp's ``Llama`` is not thread-safe).
# A timed-out call still holds the model, so nothing is retried (``LlamaCppJudge.should_retry``).
IN_PROCESS = ProviderDefaults("in-process", concurrency=1, timeout_s=600.0, retry=RetryConfig(max_attempts=1))


def is_local_url(url: str | None) -> bool:
    """Is ``url`` a server on this machine: host ``localhost`` (or ``*.localhost``), a loopback
    address (127.0.0.0/8, ::1) or the unspecified one (0.0.0.0, ::)?"""
    if not url:
        return False
    try:
        host = urlsplit(url).hostname
    except ValueError:
        return False
    if not host:
        return False
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    return address.is_loopback or address.is_unspecified


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
    concurrency: int | None = Field(default=None, ge=1)  # None: the config file's, else 32 and each provider's default
    timeout_s: float | None = Field(default=None, gt=0)  # per request; None: config, else the provider's default (60 s hosted)
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
