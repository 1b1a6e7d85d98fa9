"""Errors whose messages are shown to users as they are."""


class MnemoweaveError(Exception):
    """Base class: the message is meant for a person to read."""


class InvalidInput(MnemoweaveError):
    """The caller asked for something malformed (empty text, bad kind, bad file)."""


class NotFound(MnemoweaveError):
    """No record has the given id."""
