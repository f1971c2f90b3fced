"""In-process llama.cpp judges via llama-cpp-python (extra ``trajectory-judge[local]``).

``llamacpp:/path/model.gguf``. Imported lazily: without the package a clear error says how to
install it. instructor drives ``create_chat_completion_openai_v1`` in TOOLS mode (llama.cpp honours
forced tool calls; it ignores ``response_format: json_schema``). One model per process, calls run
one at a time in a worker thread (a ``Llama`` object is not thread-safe).
"""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from judge.llm._providers._base import Completion, JudgeClient, register_provider
from judge.llm._providers._errors import JudgeCallError, classify_sdk_error, usage_tokens
from judge.llm._settings import IN_PROCESS, JudgeConfigError, ProviderDefaults

_MODELS: dict[tuple[str, int, int, str | None], Any] = {}
_LOCK = threading.Lock()


def import_llama_cpp() -> Any:
    try:
        import llama_cpp
    except ImportError:
        raise JudgeConfigError(
            "llamacpp judges need llama-cpp-python: pip install 'trajectory-judge[local]' (builds from source: cmake >= 3.21 and ninja)"
        ) from None
    return llama_cpp


class LlamaCppJudge(JudgeClient):
    kind = "llamacpp"
    enforces_timeout = False  # llama.cpp has no request timeout; the caller's deadline abstains (the thread runs on)

    def sampling(self) -> dict[str, Any]:
        return {"temperature": 0, "seed": self.config.seed or 0, "max_tokens": self.config.max_tokens}

    def defaults(self) -> ProviderDefaults:
        """One call at a time (more would only queue on the model, their deadlines running)."""
        return IN_PROCESS

    def identity(self, messages: list[dict[str, str]], schema: dict[str, Any]) -> dict[str, Any]:
        ident = super().identity(messages, schema)
        path = Path(self.model)
        ident["file_size"] = path.stat().st_size if path.exists() else None  # another file, another key
        return ident

    def check_ready(self) -> None:
        import_llama_cpp()
        if not Path(self.model).is_file():
            raise JudgeConfigError(f"judge {self.name!r}: model file {self.model} not found")

    def _create(self) -> Any:
        llama_cpp = import_llama_cpp()
        key = (self.model, self.config.n_ctx, self.config.n_gpu_layers, self.config.chat_format)
        with _LOCK:
            if key not in _MODELS:
                llm = llama_cpp.Llama(
                    model_path=self.model,
                    n_ctx=self.config.n_ctx,
                    n_gpu_layers=self.config.n_gpu_layers,
                    chat_format=self.config.chat_format,
                    seed=self.config.seed or 0,
                    verbose=False,
                )
                import instructor

                _MODELS[key] = instructor.patch(create=llm.create_chat_completion_openai_v1, mode=instructor.Mode.TOOLS)
            return _MODELS[key]

    async def complete(self, messages: list[dict[str, str]], response_model: type[BaseModel]) -> Completion:
        import openai

        def run() -> Completion:
            create = self._create()
            with _LOCK:
                try:
                    verdict = create(
                        response_model=response_model,
                        messages=[dict(m) for m in messages],
                        max_retries=self.config.validation_retries,
                        **self.sampling(),
                    )
                except JudgeCallError:
                    raise
                except Exception as exc:
                    raise classify_sdk_error(exc, openai) from exc
            raw = getattr(verdict, "_raw_response", None)
            inp, out = usage_tokens(getattr(verdict, "_total_usage", None) or getattr(raw, "usage", None))
            return Completion(verdict=verdict, model_version=getattr(raw, "model", None) or Path(self.model).name, input_tokens=inp, output_tokens=out)

        return await asyncio.to_thread(run)

    def should_retry(self, error: JudgeCallError) -> bool:
        """A timed-out call keeps running in its thread and holds the model, so a retry would
        only queue behind it: a timeout is final here. Nothing else a local model does is transient."""
        return False


register_provider("llamacpp", LlamaCppJudge)
