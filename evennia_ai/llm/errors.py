"""Why a model call failed, in words: one place for both routes of the client.

Every failure of a model call, on the lean OpenAI-wire route (:mod:`.openai_wire`, aiohttp) and
on litellm's (:mod:`.litellm_route`), streamed or not, becomes a :class:`ModelError`: a **kind**
(one of :data:`~evennia_ai.llm.types.ERROR_KINDS`, for code: retries, fallbacks, outage
counting) and a **text** that names the cause in words for people (``aistatus``, the dashboard,
the server log), never a Python repr::

    connection refused to http://127.0.0.1:5100/v1
    timed out after 30 s
    401 from the provider (the API key was refused): Incorrect API key provided
    the request is longer than the model's context window (8192 tokens)
    the provider is rate-limiting (429); it asks to wait 3 s
    the provider failed (502)
    the reply was not valid JSON

:func:`model_error` turns an exception (aiohttp's, asyncio's, litellm's, httpx's, an OS error)
into one, :func:`http_error` an HTTP status and body; :func:`describe` gives just the text. The
exception itself is logged at debug level (logger ``evennia_ai.llm.errors``: raise it to
``DEBUG`` to see every failed call's exception and traceback). A :class:`ProviderError` carries
a ModelError through the client's retry loop; the failed call's
:class:`~evennia_ai.llm.types.LLMResult` then has ``error`` = its text and ``error_kind`` = its
kind. Code that only holds the text (a trace's ``error``, the metrics' ``last_error``) gets the
kind back with :func:`kind_of`.

Pure: no Django, no Evennia.
"""

from __future__ import annotations

import asyncio
import errno
import json
import logging
import os
import re
import socket
import urllib.error
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timezone
from email.utils import parsedate_to_datetime
from typing import Any

import aiohttp

from evennia_ai.llm.types import ERROR_KINDS
from evennia_ai.utils import utcnow

logger = logging.getLogger(__name__)

#: Longest piece of a provider's own message kept in a text (one line).
DETAIL_CHARS = 200


@dataclass(frozen=True)
class ModelError:
    """Why one model call failed.

    Attributes:
        kind: One of :data:`~evennia_ai.llm.types.ERROR_KINDS` ("connection", "timeout",
            "auth", "rate_limit", "server", "bad_request", "context_overflow", "malformed",
            "empty", "unknown").
        text: The cause in words, for people and the log (no reprs, one line).
        retry_after: Seconds the server asked us to wait, if it said.
        status: The HTTP status of the answer, when there was one.
    """

    kind: str
    text: str
    retry_after: float | None = None
    status: int | None = None

    def __post_init__(self) -> None:
        if self.kind not in ERROR_KINDS:
            raise ValueError(f"unknown error kind {self.kind!r}")


class ProviderError(Exception):
    """A classified provider failure (internal to the client's retry loop).

    Attributes:
        error: The :class:`ModelError` (its text is the exception's message).
        kind: ``error.kind``.
        retry_after: ``error.retry_after``.
        streamed: Pieces of the answer had already been handed to ``on_delta`` (the player
            may have seen them): the call is not retried.
    """

    def __init__(self, kind: str, message: str, retry_after: float | None = None):
        self.error = ModelError(kind, message, retry_after)
        super().__init__(message)
        self.kind = kind
        self.retry_after = retry_after
        self.streamed = False

    @classmethod
    def of(cls, error: ModelError) -> ProviderError:
        """The ProviderError carrying ``error``."""
        raised = cls(error.kind, error.text, error.retry_after)
        raised.error = error
        return raised


# -- texts ---------------------------------------------------------------------------------------
#: How each text of this module starts, by kind (what :func:`kind_of` reads back).
_OPENINGS: tuple[tuple[str, str], ...] = (
    ("connection refused to ", "connection"),
    ("could not connect to ", "connection"),
    ("could not find the host ", "connection"),
    ("the server at ", "connection"),
    ("timed out after ", "timeout"),
    ("the provider is rate-limiting", "rate_limit"),
    ("every server of ", "rate_limit"),
    ("401 from the provider", "auth"),
    ("403 from the provider", "auth"),
    ("the request is longer than the model's context window", "context_overflow"),
    ("the request does not fit", "context_overflow"),
    ("the provider failed", "server"),
    ("the provider is unavailable", "server"),
    ("the provider refused the request", "bad_request"),
    ("404 from the provider", "bad_request"),
    ("the request is too large", "bad_request"),
    ("the request is not valid", "bad_request"),
    ("the reply was not ", "malformed"),
    ("the streamed reply was not ", "malformed"),
    ("the reply was empty", "empty"),
    ("the streamed reply was empty", "empty"),
    ("the call failed", "unknown"),
)


def kind_of(text: str | None) -> str | None:
    """The kind of a failure from its text (as a trace's ``error`` or ``last_error`` holds it).

    The text may be wrapped (``model call failed: openai/x: connection refused to ...``, or
    the client's ``every model failed - a: ...; b: ...``): the first failure named wins.

    Args:
        text: An error text made by this module, possibly with a prefix.

    Returns:
        One of :data:`~evennia_ai.llm.types.ERROR_KINDS`, or None when the text is not one of
        this module's (or is empty).
    """
    if not text:
        return None
    best: tuple[int, str] | None = None
    for opening, kind in _OPENINGS:
        at = text.find(opening)
        if at >= 0 and (best is None or at < best[0]):
            best = (at, kind)
    return best[1] if best else None


def shown_url(url: str | None) -> str:
    """An endpoint as people should see it: no credentials, no ``/chat/completions`` tail.

    Args:
        url: The request's URL or the configured ``api_base`` (None: unknown).

    Returns:
        ``http://127.0.0.1:5100/v1`` for ``http://user:key@127.0.0.1:5100/v1/chat/completions``;
        "" when ``url`` is empty.
    """
    if not url:
        return ""
    text = str(url).strip()
    try:
        parts = urllib.parse.urlsplit(text)
    except ValueError:
        return ""
    if parts.username is not None or parts.password is not None:
        host = parts.hostname or ""
        if ":" in host:
            host = f"[{host}]"
        try:
            port = parts.port
        except ValueError:
            port = None
        netloc = host + (f":{port}" if port else "")
        parts = parts._replace(netloc=netloc)
    path = parts.path.rstrip("/")
    if path.endswith("/chat/completions"):
        path = path[: -len("/chat/completions")]
    return urllib.parse.urlunsplit(parts._replace(path=path, query="", fragment="")) or ""


_REPR = re.compile(r"\s*ssl:<[^>]*>|<[^<>]* object at 0x[0-9a-fA-F]+>|\bat 0x[0-9a-fA-F]+")
_CLASS_PREFIX = re.compile(r"^(?:litellm\.)?[A-Za-z_.]*(?:Error|Exception|Timeout)\s*[:-]\s*")
_WRAPPED = re.compile(r"<([A-Za-z_.]*(?:Error|Exception))\s*:?\s*([^<>]*)>")
_KEY = re.compile(r"\b((?:sk|pk|rk)-)[A-Za-z0-9_\-]{12,}")


def clean_words(text: Any, limit: int = DETAIL_CHARS) -> str:
    """One line of ``text`` as people may read it: no class-name prefixes, no object reprs, no
    HTML page, no API key; "" when nothing readable is left.

    Args:
        text: A provider's message, an exception's ``str``.
        limit: Most characters kept (an ellipsis marks the cut).
    """
    line = next((part.strip() for part in str(text or "").splitlines() if part.strip()), "")
    if line.startswith("<") and not _WRAPPED.match(line):
        return ""  # an HTML error page or a bare repr: the status says it better
    previous = None
    while previous != line:
        previous = line
        line = _CLASS_PREFIX.sub("", line).strip()
    line = line.split(", Received response")[0].split(" Error_str:")[0]
    line = line.split(" Original exception:")[0].split(" Original Response:")[0]
    line = _WRAPPED.sub(lambda m: m.group(2).strip(" ,'\""), line)
    line = _REPR.sub("", line)
    line = re.sub(r"^error - ", "", line)
    line = _KEY.sub(lambda m: m.group(1) + "...", line)
    line = re.sub(r"\s+", " ", line).strip(" ,;:-")
    if "<" in line and ">" in line and re.search(r"<[A-Za-z/!]", line):
        line = re.sub(r"<[^>]*>", "", line).strip()  # stray tags of an HTML fragment
    return (line[:limit].rstrip() + "...") if len(line) > limit else line


def words(err: BaseException) -> str:
    """An exception's message in words (see :func:`clean_words`); "" when it has none."""
    return clean_words(str(err))


def _provider_message(body: Any) -> str:
    """The ``error.message`` (or ``detail``) of an OpenAI-style error body, else its text."""
    text = body.decode("utf-8", "replace") if isinstance(body, bytes) else str(body or "")
    text = text.strip()
    start = text.find("{")
    data: Any = None
    if start >= 0:
        try:
            data = json.loads(text[start:])
        except ValueError:
            data = None
    if isinstance(data, dict):
        error = data.get("error")
        message = error.get("message") if isinstance(error, dict) else error
        if isinstance(message, str) and message.strip():
            return message.strip()
        if isinstance(data.get("detail"), str):
            return str(data["detail"])
        if isinstance(data.get("message"), str):
            return str(data["message"])
    return text


def _error_code(body: Any) -> str:
    """The ``error.code`` (or ``type``) of an OpenAI-style error body, else ""."""
    text = body.decode("utf-8", "replace") if isinstance(body, bytes) else str(body or "")
    start = text.find("{")
    try:
        data = json.loads(text[start:]) if start >= 0 else None
    except ValueError:
        return ""
    error = data.get("error") if isinstance(data, dict) else None
    if isinstance(error, dict):
        return str(error.get("code") or error.get("type") or "")
    return ""


# -- HTTP answers ---------------------------------------------------------------------------------
_CONTEXT_WORDS = re.compile(
    r"context[_ ]length|context[_ ]window|maximum context|too many tokens|prompt is too long|"
    r"input is too long|exceeds? the (?:model's )?(?:maximum|max) (?:context|input)|"
    r"reduce the length of the messages",
    re.I,
)
_WINDOW_SIZE = re.compile(
    r"(?:maximum context length|context (?:length|window)(?: size)?|max_model_len)"
    r"\D{0,20}?(\d[\d,]*)\s*tokens?",
    re.I,
)


def parse_retry_after(value: Any) -> float | None:
    """Seconds to wait from a ``Retry-After`` value: delay-seconds or an HTTP date (RFC 9110).

    A date in the past means at once (0.0); anything unreadable is None (our backoff applies).
    """
    if value is None:
        return None
    text = str(value).strip()
    if not text:
        return None
    try:
        return max(0.0, float(text))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    if when is None:
        return None
    if when.tzinfo is None:  # an HTTP date is GMT; a malformed zone-less one is taken as such
        when = when.replace(tzinfo=timezone.utc)
    return max(0.0, (when - utcnow()).total_seconds())


def retry_after_of(headers: Any) -> float | None:
    """Seconds from a ``retry-after-ms`` or ``Retry-After`` header (None when neither reads)."""
    if not headers:
        return None
    try:
        millis = headers.get("retry-after-ms")
        if millis:
            return float(millis) / 1000.0
        return parse_retry_after(headers.get("retry-after") or headers.get("Retry-After"))
    except (TypeError, ValueError, AttributeError):
        return None


def is_context_error(status: int | None, message: str, code: str = "") -> bool:
    """Whether a refusal says the request is longer than the model's window."""
    if code in ("context_length_exceeded", "string_above_max_length"):
        return True
    return status in (None, 400, 413, 422) and bool(_CONTEXT_WORDS.search(message or ""))


def context_text(message: str = "") -> str:
    """The text of a request refused for the model's window (its size, when the provider said)."""
    size = _WINDOW_SIZE.search(message or "")
    window = f" ({size.group(1)} tokens)" if size else ""
    return f"the request is longer than the model's context window{window}"


def http_error(
    status: int,
    body: Any = b"",
    *,
    headers: Mapping[str, str] | Any = None,
    url: str | None = None,
    retry_after: float | None = None,
    code: str = "",
) -> ModelError:
    """A failed HTTP answer in words.

    Args:
        status: The HTTP status (400 or more).
        body: The answer's body (bytes or text; an OpenAI-style error body is read for its
            message and code) or the provider's message as litellm gave it.
        headers: The answer's headers (``Retry-After`` is read), if any.
        url: The endpoint (named for a 404).
        retry_after: Seconds to wait when already known (instead of the headers').
        code: The provider's error code when already read (``context_length_exceeded``).
    """
    message = _provider_message(body)
    detail = clean_words(message)
    wait = retry_after if retry_after is not None else retry_after_of(headers)
    if is_context_error(status, message, code or _error_code(body)):
        return ModelError("context_overflow", context_text(message), None, status)
    if status == 429:
        text = "the provider is rate-limiting (429)"
        if wait:
            text += f"; it asks to wait {wait:g} s"
        return ModelError("rate_limit", text, wait, status)
    if status == 401:
        kind, text = "auth", "401 from the provider (the API key was refused)"
    elif status == 403:
        kind, text = "auth", "403 from the provider (the API key may not use this model)"
    elif status == 404:
        where = shown_url(url)
        kind, text = "bad_request", "404 from the provider (no such model or address" + (
            f" at {where})" if where else ")"
        )
    elif status == 413:
        kind, text = "bad_request", "the request is too large for the provider (413)"
    elif 400 <= status < 500:
        kind, text = "bad_request", f"the provider refused the request ({status})"
    elif status == 503:
        kind, text = "server", "the provider is unavailable (503)"
    else:
        kind, text = "server", f"the provider failed ({status})"
    if detail and detail.lower() not in (f"http {status}", text.lower()):
        text += f": {detail}"
    return ModelError(kind, text, wait if kind == "server" else None, status)


# -- exceptions ---------------------------------------------------------------------------------
_TIMEOUTS = frozenset(
    {"Timeout", "APITimeoutError", "TimeoutException", "ReadTimeout", "ConnectTimeout"}
    | {"TimeoutError", "ServerTimeoutError", "SocketTimeoutError", "ConnectionTimeoutError"}
)
_CONNECTIONS = frozenset(
    {
        "APIConnectionError",
        "ConnectError",
        "ConnectionError",
        "RemoteProtocolError",
        "ClientConnectorError",
        "ClientOSError",
        "ClientPayloadError",
        "ServerDisconnectedError",
    }
)
_CONNECTION_WORDS = re.compile(
    r"^Connection error\.?$|Connection refused|Connect call failed|Name or service not known|"
    r"nodename nor servname|name resolution|Server disconnected|Cannot connect to host|"
    r"ClientPayloadError|Response payload is not completed|ServerDisconnectedError|"
    r"ClientConnectorError|Connection reset|Connection aborted",
    re.I,
)
_MALFORMED_WORDS = re.compile(
    r"Expecting value|Expecting property name|Expecting ',' delimiter|Unterminated string|"
    r"Extra data|Invalid control character|JSONDecodeError|Unable to get json response|"
    r"Received response -"
)
#: HTTP statuses litellm's (and openai's) exception classes stand for, when no status is set.
_CLASS_STATUS = {
    "RateLimitError": 429,
    "AuthenticationError": 401,
    "PermissionDeniedError": 403,
    "NotFoundError": 404,
    "UnprocessableEntityError": 422,
    "BadRequestError": 400,
    "ContextWindowExceededError": 400,
    "UnsupportedParamsError": 400,
    "ContentPolicyViolationError": 400,
    "InternalServerError": 500,
    "BadGatewayError": 502,
    "ServiceUnavailableError": 503,
}


def _chain(err: BaseException | None) -> list[BaseException]:
    """``err`` and the exceptions it was raised from or during (a few levels)."""
    found: list[BaseException] = []
    while err is not None and len(found) < 6 and err not in found:
        found.append(err)
        err = err.__cause__ or err.__context__
    return found


def _names(err: BaseException) -> set[str]:
    return {cls.__name__ for cls in type(err).__mro__}


def _where(url: str | None, chain: list[BaseException]) -> str:
    """The endpoint to name: the URL when known, else the host of aiohttp's error."""
    shown = shown_url(url)
    if shown:
        return shown
    for err in chain:
        host = getattr(err, "host", None)
        port = getattr(err, "port", None)
        if isinstance(host, str) and host:
            return f"{host}:{port}" if port else host
    named = re.search(r"Cannot connect to host ([\w.\-\[\]:]+)", " ".join(map(str, chain)))
    return named.group(1) if named else "the model's endpoint"


def _os_error(chain: list[BaseException]) -> OSError | None:
    for err in chain:
        inner = getattr(err, "os_error", None)
        if isinstance(inner, OSError):
            return inner
        reason = getattr(err, "reason", None)  # urllib's URLError wraps the socket's error
        if isinstance(err, urllib.error.URLError) and isinstance(reason, OSError):
            return reason
        if isinstance(err, OSError) and not isinstance(err, asyncio.TimeoutError):
            return err
    return None


def connection_error(err: BaseException, url: str | None = None) -> ModelError:
    """A failure to reach the endpoint (or a connection lost) in words."""
    chain = _chain(err)
    where = _where(url, chain)
    names = set().union(*(_names(e) for e in chain))
    text = " ".join(str(e) for e in chain)
    if names & {"ClientPayloadError", "ContentLengthError", "TransferEncodingError"} or re.search(
        r"Response payload is not completed|closed the connection before", text
    ):
        return ModelError(
            "connection",
            f"the server at {where} closed the connection before the answer was complete",
        )
    if "ServerDisconnectedError" in names or "Server disconnected" in text:
        return ModelError(
            "connection", f"the server at {where} closed the connection without answering"
        )
    if names & {"ClientConnectorCertificateError", "SSLCertVerificationError"} or re.search(
        r"CERTIFICATE_VERIFY_FAILED|certificate verify failed", text
    ):
        return ModelError(
            "connection", f"could not connect to {where}: its TLS certificate was not accepted"
        )
    inner = _os_error(chain)
    number = getattr(inner, "errno", None)
    if number == errno.ECONNREFUSED or re.search(r"Connection refused|Connect call failed", text):
        return ModelError("connection", f"connection refused to {where}")
    if isinstance(inner, socket.gaierror) or re.search(
        r"Name or service not known|nodename nor servname|name resolution", text
    ):
        return ModelError("connection", f"could not find the host of {where} (name lookup failed)")
    if isinstance(number, int) and number > 0:
        return ModelError(
            "connection", f"could not connect to {where} ({os.strerror(number).lower()})"
        )
    return ModelError("connection", f"could not connect to {where}")


def timeout_text(seconds: float | None) -> str:
    """``timed out after 30 s`` (``timed out`` when the limit is unknown)."""
    return f"timed out after {seconds:g} s" if seconds is not None else "timed out"


def malformed(what: str = "the reply was not valid JSON") -> ModelError:
    """An answer that could not be read (``what`` says how, starting "the reply was not")."""
    return ModelError("malformed", what)


def empty(what: str = "the reply was empty") -> ModelError:
    """An answer without anything in it."""
    return ModelError("empty", what)


def model_error(
    err: BaseException, *, url: str | None = None, timeout: float | None = None
) -> ModelError:
    """The :class:`ModelError` of a failed call's exception, on either route.

    Takes asyncio's and aiohttp's exceptions (the lean route), litellm's, openai's and httpx's
    (litellm's route), OS errors and anything else (kind "unknown"); a
    :class:`ProviderError` gives its own. The exception is logged at debug level with its
    traceback (logger ``evennia_ai.llm.errors``).

    Args:
        err: What the call raised.
        url: The endpoint called (named in connection failures), if known.
        timeout: The call's limit in seconds (named in timeouts), if known.
    """
    if isinstance(err, ProviderError):
        return err.error
    error = _classify(err, url, timeout)
    logger.debug(
        "evennia_ai: a model call failed (%s): %s",
        error.text,
        type(err).__name__,
        exc_info=(type(err), err, err.__traceback__),
    )
    return error


def describe(err: BaseException, *, url: str | None = None, timeout: float | None = None) -> str:
    """Why a model call failed, in words (:attr:`ModelError.text` of :func:`model_error`)."""
    return model_error(err, url=url, timeout=timeout).text


#: Exceptions that are faults in code (the plugin's or the game's): their messages name code.
_FAULTS = (LookupError, AttributeError, TypeError, NameError, AssertionError, RecursionError)
#: What a fault in code reads as for people.
UNEXPECTED = "an unexpected error; the log has the details"


def reason(err: BaseException) -> str:
    """Why something that is not a model call failed, in words, for staff and the log.

    A file or socket error names its cause (``permission denied: /srv/prompt.txt``), text
    that is not UTF-8 says so, a model or connection failure reads as :func:`describe` says,
    anything else is its own message without class names; a fault in code (a ``KeyError``, a
    ``TypeError``...) or an exception with no message reads as :data:`UNEXPECTED`. Log the exception itself at debug
    level (or with its traceback) where it is caught.
    """
    if isinstance(err, UnicodeDecodeError):
        return "it is not UTF-8 text"
    model_like = isinstance(
        err, (ConnectionError, aiohttp.ClientError, asyncio.TimeoutError, ProviderError)
    ) or bool(_names(err) & (_CONNECTIONS | _TIMEOUTS) or hasattr(err, "status_code"))
    if isinstance(err, OSError) and err.strerror and not model_like:
        where = f": {err.filename}" if err.filename else ""
        return f"{err.strerror.lower()}{where}"
    if model_like:
        return model_error(err).text.removeprefix("the call failed: ")
    if isinstance(err, _FAULTS):
        return UNEXPECTED  # a fault in code, whose message names code, not a cause
    return words(err) or UNEXPECTED


def _classify(err: BaseException, url: str | None, timeout: float | None) -> ModelError:
    names = _names(err)
    chain = _chain(err)
    status = getattr(err, "status_code", None)
    if isinstance(err, urllib.error.HTTPError):
        status = err.code
    if not isinstance(status, int):
        status = next((code for name, code in _CLASS_STATUS.items() if name in names), None)
    if (
        isinstance(err, asyncio.TimeoutError)
        or names & _TIMEOUTS
        or isinstance(getattr(err, "reason", None), TimeoutError)
    ):
        return ModelError("timeout", timeout_text(timeout))
    if names & {"RouterRateLimitError", "RouterRateLimitErrorBasic"}:
        cooldown = getattr(err, "cooldown_time", None)
        return ModelError(
            "rate_limit",
            f"every server of {getattr(err, 'model', None) or 'the model'} is cooling down "
            "after failures",
            float(cooldown) if isinstance(cooldown, (int, float)) else None,
        )
    if "ContextWindowExceededError" in names:
        return ModelError("context_overflow", context_text(str(err)), None, status)
    message = str(err)
    connection = set().union(*(_names(e) for e in chain)) & _CONNECTIONS or isinstance(
        err, (ConnectionError, aiohttp.ClientConnectionError)
    )
    if status in (None, 500) and (connection or _CONNECTION_WORDS.search(message)):
        return connection_error(err, url)
    if status in (None, 200, 500) and _MALFORMED_WORDS.search(message):
        return malformed()  # litellm reports an unreadable 200 body as a 500
    if isinstance(err, aiohttp.InvalidURL):
        return ModelError("bad_request", f"the endpoint address is not valid: {words(err)}")
    if isinstance(status, int) and status >= 400:
        return http_error(
            status,
            _exception_message(err),
            retry_after=retry_after_of(
                getattr(err, "litellm_response_headers", None)
                or getattr(err, "headers", None)
                or getattr(getattr(err, "response", None), "headers", None)
            ),
            url=url,
            code=_exception_code(err),
        )
    if isinstance(err, OSError):
        return connection_error(err, url)
    detail = words(err)
    return ModelError("unknown", f"the call failed: {detail}" if detail else "the call failed")


def _exception_message(err: BaseException) -> str:
    """The provider's message inside a litellm/openai exception (its body when it kept one)."""
    body = getattr(err, "body", None)
    if isinstance(body, dict):
        inner = body.get("error")
        message = body.get("message") or (
            inner.get("message") if isinstance(inner, dict) else inner
        )
        if isinstance(message, str) and message.strip():
            return message
    return clean_words(str(err), 1000)


def _exception_code(err: BaseException) -> str:
    """The provider's error code a litellm/openai exception kept (``context_length_exceeded``)."""
    code = getattr(err, "code", None)
    body = getattr(err, "body", None)
    if not code and isinstance(body, dict):
        inner = body.get("error")
        code = body.get("code") or (inner.get("code") if isinstance(inner, dict) else None)
    return code if isinstance(code, str) else ""
