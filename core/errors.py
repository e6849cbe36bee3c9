"""Errors that carry a one-line, user-facing explanation."""


class ChatlogError(Exception):
    """Base of errors shown to the user as one line, without a traceback."""


class StackError(ChatlogError):
    """The local stack could not be fetched, started, checked or stopped."""


class SettingsError(ChatlogError):
    """A setting has a wrong value."""
