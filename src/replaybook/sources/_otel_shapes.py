"""The span shapes of OpenLLMetry and OpenInference, read into the ``gen_ai.*`` terms the OTel
loader (:mod:`replaybook.sources.otel`) works in.

Many traces are written by instrumentations that predate, or stand beside, the OpenTelemetry
GenAI semantic conventions.  :func:`read_shape` reads one span's attributes in either of two
such vocabularies and says what they mean in the loader's terms — the ``gen_ai.*`` attributes a
span of the conventions would carry (``gen_ai.operation.name``, ``gen_ai.tool.name``,
``gen_ai.tool.call.arguments``, ``gen_ai.input.messages`` …), never replacing one the span has —
so that pairing, the folding of nested tool spans and the counting-once of a call that is both a
tool span and a model's message are the loader's one logic for every shape.

OpenLLMetry (Traceloop)
-----------------------
``opentelemetry-semantic-conventions-ai`` 0.4.x (``SpanAttributes``, ``TraceloopSpanKindValues``,
``LLMRequestTypeValues``), the ``traceloop-sdk`` decorators and ``opentelemetry-instrumentation-mcp``
(the instrumentations before their 0.5 move to the GenAI conventions, which the loader reads
as such):

* ``traceloop.span.kind`` ``workflow`` / ``task`` / ``agent`` / ``tool`` (span name
  ``<entity>.<kind>``), ``traceloop.entity.name``; ``traceloop.entity.input`` /
  ``traceloop.entity.output`` JSON text: a decorated function's ``{"args": […], "kwargs": {…}}``
  and return value; an MCP ``tools/call`` (client span ``<tool>.tool``; FastMCP's server span
  under ``mcp.server``, ``traceloop.workflow.name`` ``<server>.mcp``) ``{"tool_name", "arguments"}``
  and ``{"result": <first text block>, "is_error": true}`` (client) or
  ``[{"type": "text", "content"}]`` (server).
* model spans: ``llm.request.type`` (``chat``, ``completion``; ``embedding`` and ``rerank`` are
  no model request here), ``gen_ai.request.model`` / ``gen_ai.response.model``,
  ``gen_ai.usage.prompt_tokens`` / ``completion_tokens``, and the indexed content
  ``gen_ai.prompt.{i}.role`` / ``.content`` / ``.tool_call_id`` / ``.tool_calls.{j}.id|name|arguments``,
  ``gen_ai.completion.{i}.role`` / ``.content`` / ``.finish_reason`` /
  ``.tool_calls.{j}.id|name|arguments`` (``.function_call.name|arguments`` before tool calls;
  ``gen_ai.prompt.{i}.user`` for a completions request's prompt).
  A content that is the JSON text of a list of content blocks (the Anthropic instrumentation
  writes one) is read as blocks: ``text``, ``tool_use`` (a call), ``tool_result`` (its answer).

OpenInference (Arize Phoenix)
-----------------------------
``openinference-semantic-conventions`` (``spec/semantic_conventions.md``, ``spec/tool_calling.md``;
Python package 0.1.x):

* ``openinference.span.kind`` ``LLM``, ``TOOL``, ``AGENT``, ``CHAIN``, ``RETRIEVER`` … (any
  case); ``session.id`` (the conversation, when no ``gen_ai.conversation.id``); ``agent.name``.
* ``TOOL``: ``tool.name``; the call's id ``tool_call.id`` (``tool.id``; ``tool.call_id`` as
  some instrumentations write it); its arguments ``tool_call.function.arguments``, else
  ``input.value`` (JSON when ``input.mime_type`` is ``application/json``), else ``tool.parameters``
  — which the specification makes the tool's *parameter schema*, so it is read as arguments only
  when it is no JSON Schema (no ``properties`` / ``$schema`` / ``"type": "object"``), as some
  instrumentations write the call's values there; its result ``output.value``.
* ``LLM``: ``llm.model_name`` (``llm.request.model_name`` / ``llm.response.model_name``),
  ``llm.token_count.prompt`` / ``.completion``, ``llm.input_messages.{i}.message.role`` /
  ``.content`` / ``.contents.{j}.message_content.type|text`` / ``.tool_call_id`` / ``.name`` /
  ``.tool_calls.{j}.tool_call.id|function.name|function.arguments`` and the same under
  ``llm.output_messages`` (``message.function_call_name`` / ``_arguments_json`` before tool
  calls); the completions API's ``llm.prompts.{i}.prompt.text`` / ``llm.choices.{i}.completion.text``.

Values of the wrong type (a kind, name, id or token count that is not text or an integer, an
index that is not a number, a tool call without a name) are reported in :attr:`Shape.problems`;
the loader puts each in the quarantine with the span's file and line, and the span keeps a row
with what could be read.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import orjson

from .. import _json
from .._text import deep_safe, int_or_none
from ..canonical import arguments_from_text

__all__ = ["Shape", "read_shape"]


@dataclass
class Shape:
    """What a span's OpenLLMetry / OpenInference attributes mean in ``gen_ai.*`` terms.

    Attributes:
        convention: ``"openllmetry"``, ``"openinference"`` or None (neither shape).
        line_type: ``steps.line_type`` for the span (``openinference:TOOL``, ``traceloop:tool``,
            ``traceloop:chat`` …), or None to let the loader name it.
        derived: ``gen_ai.*`` attributes the span means (added where the span has none).
        agent: the agent's name when the span is an agent's (OpenLLMetry ``agent``,
            OpenInference ``AGENT``).
        is_error: the result's own error flag (an MCP result's ``isError``), or None.
        args_attr: the attribute the arguments were read from (named in the loader's notes).
        args_text: arguments recorded as text that is no arguments object (kept in ``text``).
        args_note: why ``args_text`` gives no ``args_key`` (the loader's note).
        problems: ``(attribute, what is wrong, value)`` for each value that could not be used.
    """

    convention: str | None = None
    line_type: str | None = None
    derived: dict = field(default_factory=dict)
    agent: str | None = None
    is_error: bool | None = None
    args_attr: str | None = None
    args_text: str | None = None
    args_note: str | None = None
    problems: list[tuple[str, str, Any]] = field(default_factory=list)


def read_shape(attrs: dict, name: str | None) -> Shape:
    """Read a span's attributes (decoded OTLP values) in the OpenLLMetry and OpenInference
    shapes described in this module's docstring.

    Args:
        attrs: the span's attributes, ``{key: value}`` as :func:`replaybook.sources.otel.otlp_value`
            decodes them.
        name: the span's name (tool and agent names fall back on it).

    Returns:
        a :class:`Shape`; ``Shape()`` (nothing derived) for a span of neither shape.  Never
        raises: a value of the wrong type is a ``problems`` entry.
    """
    sh = Shape()
    _tokens(attrs, sh)
    if "traceloop.span.kind" in attrs or "llm.request.type" in attrs or _has_indexed(attrs, _TL_CONTENT):
        _openllmetry(attrs, name, sh)
    if "openinference.span.kind" in attrs:
        _openinference(attrs, name, sh)
    if "gen_ai.operation.name" in attrs:   # the span says its operation in GenAI terms: that names it
        sh.line_type = None
    return sh


# --------------------------------------------------------------------------- helpers

_TL_CONTENT = ("gen_ai.prompt.", "gen_ai.completion.")
_INDEXED = re.compile(r"(\d+)\.(.+)", re.S)


def _has_indexed(attrs: dict, prefixes: tuple[str, ...]) -> bool:
    """Whether some key is ``<prefix><digit>…`` for one of ``prefixes`` (each ending in a dot)."""
    return any(k[len(p):len(p) + 1].isdigit() for k in attrs for p in prefixes if k.startswith(p))


def _group(flat: dict, prefix: str, sh: Shape, where: str = "") -> list[dict]:
    """``prefix.{i}.rest`` keys of ``flat`` as ``[{rest: value}, …]`` in index order.  A key
    under ``prefix.`` whose index is no number is a problem, when some key has one."""
    p = prefix + "."
    found: dict[int, dict] = {}
    odd: list[str] = []
    for k, v in flat.items():
        if not k.startswith(p):
            continue
        m = _INDEXED.fullmatch(k[len(p):])
        if m is None:
            odd.append(k)
            continue
        found.setdefault(int(m.group(1)), {})[m.group(2)] = v
    if found:
        for k in odd:
            sh.problems.append((where + k, f"is not {where}{prefix}.<index>.<field> (its index is no number)",
                                flat[k]))
    return [found[i] for i in sorted(found)]


def _text(v: Any, attr: str, sh: Shape) -> str | None:
    """``v`` when it is text (None when absent); any other value is a problem."""
    if v is None or isinstance(v, str):
        return v
    sh.problems.append((attr, f"is not text ({type(v).__name__})", v))
    return None


def _count(attrs: dict, key: str, sh: Shape) -> int | None:
    v = attrs.get(key)
    if v is None:
        return None
    n = int_or_none(v, integral_float=True)
    if n is None and isinstance(v, str) and v.isascii() and v.isdigit():
        n = int_or_none(int(v))
    if n is None or n < 0:
        sh.problems.append((key, "is not a token count (a whole number, 0 or more)", v))
        return None
    return n


def _tokens(attrs: dict, sh: Shape) -> None:
    """``gen_ai.usage.prompt_tokens`` / ``completion_tokens`` (GenAI conventions before 1.27 and
    OpenLLMetry 0.4) as ``input_tokens`` / ``output_tokens``."""
    for old, new in (("gen_ai.usage.prompt_tokens", "gen_ai.usage.input_tokens"),
                     ("gen_ai.usage.completion_tokens", "gen_ai.usage.output_tokens")):
        if new not in attrs and old in attrs:
            n = _count(attrs, old, sh)
            if n is not None:
                sh.derived[new] = n


def _json_text(v: Any) -> tuple[Any, bool]:
    """``(value, True)`` for JSON text parsed (or a structured value as it is); ``(v, False)``
    for text that is not JSON."""
    if not isinstance(v, str):
        return v, True
    try:
        return deep_safe(_json.loads(v)), True
    except orjson.JSONDecodeError:
        try:
            return deep_safe(_json.loads_lenient(v)), True
        except (ValueError, RecursionError):
            return v, False


def _args_value(v: Any) -> tuple[Any, bool]:
    """:func:`_json_text` for text that holds arguments: parsed by
    :func:`~replaybook.canonical.arguments_from_text`, the one parser of argument text."""
    if not isinstance(v, str):
        return v, True
    try:
        return arguments_from_text(v), True
    except (ValueError, RecursionError):
        return v, False


def _blocks(content: Any) -> list | None:
    """A message content that is the JSON text of a list of typed content blocks, as a list."""
    if not isinstance(content, str) or not content.lstrip().startswith("["):
        return None
    v, ok = _json_text(content)
    if ok and isinstance(v, list) and v and all(isinstance(b, dict) and isinstance(b.get("type"), str) for b in v):
        return v
    return None


def _message(role: str | None, content: Any, calls: list[dict], call_id: Any, name: Any) -> list[dict]:
    """One message in the OpenAI chat format the loader reads (``role``, ``content``,
    ``tool_calls[].function``, ``tool_call_id``); a content of blocks with ``tool_result``
    parts gives one ``tool`` message per result."""
    out: list[dict] = []
    blocks = _blocks(content)
    if blocks is not None:
        texts: list[dict] = []
        for b in blocks:
            t = b["type"]
            if t == "text" and isinstance(b.get("text"), str):
                texts.append({"type": "text", "text": b["text"]})
            elif t == "tool_use" and isinstance(b.get("name"), str):
                calls = calls + [{"id": b.get("id"), "name": b["name"], "arguments": b.get("input")}]
            elif t == "tool_result" and b.get("tool_use_id") is not None:
                c = b.get("content")
                if isinstance(c, list):
                    c = "\n".join(x["text"] for x in c if isinstance(x, dict) and isinstance(x.get("text"), str))
                out.append({"role": "tool", "tool_call_id": b["tool_use_id"],
                            "content": c if isinstance(c, str) else _json.dumps(c).decode()})
        content = texts
    m: dict = {"role": role, "content": content}
    if calls:
        m["tool_calls"] = [{"id": c.get("id"), "type": "function",
                            "function": {"name": c["name"], "arguments": c.get("arguments")}} for c in calls]
    if call_id is not None:
        m["tool_call_id"] = call_id
    if name is not None:
        m["name"] = name
    if (content or calls or call_id is not None) or not out:
        out.insert(0, m)
    return out


def _schema_like(v: Any) -> bool:
    return isinstance(v, dict) and ("properties" in v or "$schema" in v or v.get("type") == "object")


# --------------------------------------------------------------------------- OpenLLMetry

def _openllmetry(attrs: dict, name: str | None, sh: Shape) -> None:
    kind = _text(attrs.get("traceloop.span.kind"), "traceloop.span.kind", sh)
    entity = _text(attrs.get("traceloop.entity.name"), "traceloop.entity.name", sh)
    rtype = _text(attrs.get("llm.request.type"), "llm.request.type", sh)
    sh.convention = "openllmetry"
    if kind is not None:
        sh.line_type = f"traceloop:{kind}"
    if kind == "tool":
        _tl_tool(attrs, entity or _name_before(name, ".tool"), sh)
        return
    if kind == "agent":
        sh.agent = entity or _name_before(name, ".agent")
        return
    if kind is not None:
        return
    if rtype in ("embedding", "rerank"):
        sh.line_type = f"traceloop:{rtype}"
        return
    if rtype not in (None, "chat", "completion", "unknown") and not _has_indexed(attrs, _TL_CONTENT):
        sh.line_type = f"traceloop:{rtype}"
        return
    op = "text_completion" if rtype == "completion" else "chat"
    sh.line_type = f"traceloop:{rtype or 'chat'}"
    sh.derived["gen_ai.operation.name"] = op
    for what, prefix in (("input", "gen_ai.prompt"), ("output", "gen_ai.completion")):
        msgs: list[dict] = []
        for i, d in enumerate(_group(attrs, prefix, sh)):
            where = f"{prefix}.{i}."
            role = _text(d.get("role"), where + "role", sh)
            content = d.get("content")
            if role is None and content is None and "user" in d:    # a completions request: .{i}.user
                role, content = "user", d["user"]
            if content is not None and not isinstance(content, (str, list)):
                sh.problems.append((where + "content", f"is not text ({type(content).__name__})", content))
                content = None
            calls = _calls(d, "tool_calls", ("name",), ("arguments",), ("id",), where, sh)
            fn = _text(d.get("function_call.name"), where + "function_call.name", sh)
            if fn:
                calls.append({"id": None, "name": fn, "arguments": d.get("function_call.arguments")})
            msgs.extend(_message(role, content, calls, _text(d.get("tool_call_id"), where + "tool_call_id", sh),
                                 None))
        if msgs:
            sh.derived[f"gen_ai.{what}.messages"] = msgs


def _name_before(name: str | None, suffix: str) -> str | None:
    if isinstance(name, str) and name.endswith(suffix) and len(name) > len(suffix):
        return name[:-len(suffix)]
    return None


def _tl_tool(attrs: dict, tool: str | None, sh: Shape) -> None:
    sh.derived["gen_ai.operation.name"] = "execute_tool"
    if tool:
        sh.derived["gen_ai.tool.name"] = tool
    wf = attrs.get("traceloop.workflow.name")
    if isinstance(wf, str) and wf.endswith(".mcp") and len(wf) > 4:
        sh.derived["mcp.server.name"] = wf[:-4]        # FastMCP's server-side span
    if "traceloop.entity.input" in attrs:
        sh.args_attr = "traceloop.entity.input"
        raw = attrs["traceloop.entity.input"]
        v, ok = _args_value(raw)
        if not ok:
            sh.derived["gen_ai.tool.call.arguments"] = raw          # kept as text; the loader notes it
        elif isinstance(v, dict) and "arguments" in v and set(v) <= {"tool_name", "arguments"}:
            sh.derived["gen_ai.tool.call.arguments"] = v["arguments"] if v["arguments"] is not None else {}
        elif isinstance(v, dict) and set(v) == {"args", "kwargs"}:
            if v["args"] in ([], None) and isinstance(v["kwargs"], dict):
                sh.derived["gen_ai.tool.call.arguments"] = v["kwargs"]
            else:   # positional arguments: their names are not recorded, so no key compares them
                sh.args_text = raw if isinstance(raw, str) else _json.dumps(raw).decode()
                sh.args_note = ("traceloop.entity.input holds positional arguments (their names are not "
                                "recorded); kept as text, args_key left NA")
        else:
            sh.derived["gen_ai.tool.call.arguments"] = v
    if "traceloop.entity.output" in attrs:
        out, ok = _json_text(attrs["traceloop.entity.output"])
        result: Any = attrs["traceloop.entity.output"]
        if ok and isinstance(out, dict) and "result" in out and set(out) <= {"result", "is_error"}:
            result = out["result"]
            if isinstance(out.get("is_error"), bool):
                sh.is_error = out["is_error"]
            elif "is_error" in out:
                sh.problems.append(("traceloop.entity.output", "has an is_error that is not true or false",
                                    out["is_error"]))
        elif ok and isinstance(out, list) and out and all(
                isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("content"), str) for b in out):
            result = "\n".join(b["content"] for b in out)
        elif ok and isinstance(out, str):
            result = out                                    # a function that returned text
        if result is not None and not isinstance(result, str):
            result = _json.dumps(result).decode()
        sh.derived["gen_ai.tool.call.result"] = result


def _calls(d: dict, prefix: str, name_keys: tuple, args_keys: tuple, id_keys: tuple, where: str,
           sh: Shape) -> list[dict]:
    """The tool calls ``prefix.{j}.*`` of one flattened message."""
    out = []
    for j, c in enumerate(_group(d, prefix, sh, where)):
        at = f"{where}{prefix}.{j}."
        name = next((c[k] for k in name_keys if k in c), None)
        if not isinstance(name, str) or not name:
            sh.problems.append((at + name_keys[0], "is missing or not text: a tool call without a name cannot be "
                                "counted", name if name is not None else c))
            continue
        cid = next((c[k] for k in id_keys if k in c), None)
        if cid is not None and (isinstance(cid, bool) or not isinstance(cid, (str, int))):
            sh.problems.append((at + id_keys[0], f"is not text ({type(cid).__name__})", cid))
            cid = None
        out.append({"id": cid, "name": name, "arguments": next((c[k] for k in args_keys if k in c), None)})
    return out


# --------------------------------------------------------------------------- OpenInference

def _openinference(attrs: dict, name: str | None, sh: Shape) -> None:
    kind = _text(attrs.get("openinference.span.kind"), "openinference.span.kind", sh)
    sh.convention = "openinference"
    sess = _text(attrs.get("session.id"), "session.id", sh)
    if sess and "gen_ai.conversation.id" not in attrs:
        sh.derived["gen_ai.conversation.id"] = sess
    if kind is None:
        return
    k = kind.upper()
    sh.line_type = f"openinference:{k}"
    if k == "TOOL":
        _oi_tool(attrs, name, sh)
    elif k == "LLM":
        _oi_llm(attrs, sh)
    elif k == "AGENT":
        sh.agent = _text(attrs.get("agent.name"), "agent.name", sh) or name


def _oi_tool(attrs: dict, name: str | None, sh: Shape) -> None:
    sh.derived["gen_ai.operation.name"] = "execute_tool"
    tool = (_text(attrs.get("tool.name"), "tool.name", sh)
            or _text(attrs.get("tool_call.function.name"), "tool_call.function.name", sh) or name)
    if tool:
        sh.derived["gen_ai.tool.name"] = tool
    for key in ("tool_call.id", "tool.id", "tool.call_id"):
        cid = attrs.get(key)
        if cid is None:
            continue
        if isinstance(cid, (str, int)) and not isinstance(cid, bool) and str(cid).strip():
            sh.derived["gen_ai.tool.call.id"] = str(cid)
            break
        sh.problems.append((key, "is not a call id (text)", cid))
    if "tool_call.function.arguments" in attrs:
        sh.args_attr = "tool_call.function.arguments"
        sh.derived["gen_ai.tool.call.arguments"] = attrs["tool_call.function.arguments"]
    elif attrs.get("input.value") is not None:
        sh.args_attr = "input.value"
        v = attrs["input.value"]
        mime = attrs.get("input.mime_type")
        if mime is not None and not isinstance(mime, str):
            sh.problems.append(("input.mime_type", f"is not text ({type(mime).__name__})", mime))
        elif mime not in (None, "application/json", "text/plain"):
            sh.problems.append(("input.mime_type", "is neither application/json nor text/plain", mime))
        parsed, ok = _args_value(v)
        if ok and isinstance(parsed, (dict, list)):
            sh.derived["gen_ai.tool.call.arguments"] = parsed
        else:
            if mime == "application/json" and not ok:
                sh.problems.append(("input.value", "is not JSON though input.mime_type says application/json",
                                    v))
            sh.args_text = v if isinstance(v, str) else _json.dumps(v).decode()
            sh.args_note = "input.value is text, not an arguments object; kept as text, args_key left NA"
    elif attrs.get("tool.parameters") is not None:
        v, ok = _args_value(attrs["tool.parameters"])
        if ok and isinstance(v, dict) and not _schema_like(v):
            sh.args_attr = "tool.parameters"
            sh.derived["gen_ai.tool.call.arguments"] = v
    out = attrs.get("output.value")
    if out is not None:
        sh.derived["gen_ai.tool.call.result"] = out if isinstance(out, str) else _json.dumps(out).decode()


def _oi_llm(attrs: dict, sh: Shape) -> None:
    sh.derived["gen_ai.operation.name"] = "chat"
    model = (_text(attrs.get("llm.request.model_name"), "llm.request.model_name", sh)
             or _text(attrs.get("llm.model_name"), "llm.model_name", sh))
    if model:
        sh.derived["gen_ai.request.model"] = model
    rmodel = _text(attrs.get("llm.response.model_name"), "llm.response.model_name", sh)
    if rmodel:
        sh.derived["gen_ai.response.model"] = rmodel
    for key, new in (("llm.token_count.prompt", "gen_ai.usage.input_tokens"),
                     ("llm.token_count.completion", "gen_ai.usage.output_tokens")):
        n = _count(attrs, key, sh)
        if n is not None:
            sh.derived.setdefault(new, n)
    for what, prefix, legacy, field_ in (("input", "llm.input_messages", "llm.prompts", "prompt.text"),
                                         ("output", "llm.output_messages", "llm.choices", "completion.text")):
        msgs: list[dict] = []
        for i, d in enumerate(_group(attrs, prefix, sh)):
            where = f"{prefix}.{i}."
            role = _text(d.get("message.role"), where + "message.role", sh)
            content: Any = _text(d.get("message.content"), where + "message.content", sh)
            parts = _group(d, "message.contents", sh, where)
            if parts:
                content = [{"type": "text", "text": p["message_content.text"]} for p in parts
                           if p.get("message_content.type", "text") == "text"
                           and isinstance(p.get("message_content.text"), str)]
            calls = _calls(d, "message.tool_calls", ("tool_call.function.name",),
                           ("tool_call.function.arguments",), ("tool_call.id",), where, sh)
            fn = _text(d.get("message.function_call_name"), where + "message.function_call_name", sh)
            if fn:
                calls.append({"id": None, "name": fn, "arguments": d.get("message.function_call_arguments_json")})
            msgs.extend(_message(role, content, calls,
                                 _text(d.get("message.tool_call_id"), where + "message.tool_call_id", sh),
                                 d.get("message.name") if isinstance(d.get("message.name"), str) else None))
        if not msgs:
            for i, d in enumerate(_group(attrs, legacy, sh)):
                t = _text(d.get(field_), f"{legacy}.{i}.{field_}", sh)
                if t is not None:
                    msgs.append({"role": "user" if what == "input" else "assistant", "content": t})
        if msgs:
            sh.derived[f"gen_ai.{what}.messages"] = msgs
