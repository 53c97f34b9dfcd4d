"""poprt's exceptions, in the runtime's three error categories (runtime/include/poprt/runtime/errors.h).

Every message is the one-line message the command-line tools print."""


class PoprtError(Exception):
    """Any error poprt raises."""


class ApplicationError(PoprtError, ValueError):
    """The caller's input is wrong: a model, an option, an array's name, dtype or shape."""


class RecoverableRuntimeError(PoprtError, RuntimeError):
    """The request can be submitted again (a timeout, a replica that was reset)."""


class UnrecoverableRuntimeError(PoprtError, RuntimeError):
    """The runtime cannot go on (out of memory, a failed device)."""
