"""Errors that carry a one-line, user-facing explanation."""


class ChatlogError(Exception):
    """Base of errors shown to the user as one line, without a traceback."""


class StackError(ChatlogError):
    """The local stack could not be fetched, started, checked or stopped."""


class SettingsError(ChatlogError):
    """A setting has a wrong value."""


def one_line(error: object, limit: int | None = 200, *, typed: bool = False) -> str:
    """``error`` (an exception, or any text) as one line for a user: every run of whitespace (line ends,
    tabs) one space, the text cut to ``limit`` characters with ``...`` marking the cut (None: never cut);
    with ``typed``, the exception's type first (``TimeoutError: timed out``; the type alone when it has
    no text)."""
    text = " ".join(str(error).split())
    if limit is not None and len(text) > limit:
        text = text[: max(limit - 3, 0)] + "..."
    if not typed:
        return text
    name = type(error).__name__
    return f"{name}: {text}" if text else name
