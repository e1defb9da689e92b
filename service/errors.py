"""The one exception hierarchy: status and error name live on the class."""

from __future__ import annotations

from eventlog.errors import (
    LogError,
    PartialDuplicate,
    Unavailable,
    WrongExpectedVersion,
)


class AppError(Exception):
    """A failure the client caused or may see; the error middleware renders it as JSON."""

    status: int = 500
    name: str = "InternalError"

    MAX_MESSAGE = 500  # messages echo names from the request; never echo a huge one back
    retry_after: int | None = None  # seconds, sent as Retry-After when set
    close_connection = False  # True: the answer closes the connection (the request is unread)

    def __init__(self, message: str) -> None:
        if len(message) > self.MAX_MESSAGE:
            message = message[: self.MAX_MESSAGE - 3] + "..."
        super().__init__(message)
        self.message = message

    def extra(self) -> dict[str, object]:
        """Fields the answer carries beside id, name and message (Unleash's, for its UI)."""
        return {}


class ValidationError(AppError):
    """The request is not valid; the message names the field (`- at $.name`)."""

    status = 400
    name = "ValidationError"


class AuthenticationRequired(AppError):
    """No valid API token, personal access token or session came with the request."""

    status = 401
    name = "AuthenticationRequired"


SIGN_IN_PATH = "/auth/simple/login"


class SignInRequired(AuthenticationRequired):
    """No credentials at all on an admin route: a browser that has not signed in. The answer
    also carries Unleash's sign-in hints, which its UI reads to show its sign-in form
    (docs/behavior.md, "Errors")."""

    def extra(self) -> dict[str, object]:
        return {"type": "password", "path": SIGN_IN_PATH, "defaultHidden": False, "options": []}


class NoAccess(AppError):
    """The caller lacks the permission this operation needs."""

    status = 403
    name = "NoAccessError"


class NotFound(AppError):
    """What the path (or the body) names does not exist."""

    status = 404
    name = "NotFoundError"


class MethodNotAllowed(AppError):
    """The path exists, not with this method (the Allow header lists those it has)."""

    status = 405
    name = "MethodNotAllowedError"


class _Conflicting(AppError):
    """A 409. Unleash's UI shows a 409 by its `details` (`[{message}]`), and without them
    only "Action could not be performed" (the create dialog's "A flag with that name already
    exists" among others): the answer carries them, the message once more."""

    status = 409

    def extra(self) -> dict[str, object]:
        return {"details": [{"message": self.message}]}


class NameExists(_Conflicting):
    """The name (or id) is taken."""

    name = "NameExistsError"


class Conflict(_Conflicting):
    """The request conflicts with the current state (the message says how)."""

    name = "ConflictError"


class PayloadTooLarge(AppError):
    """The body is over 1 MiB, before or after decompression."""

    status = 413
    name = "PayloadTooLargeError"


class HeaderFieldsTooLarge(AppError):
    """The request line (its path and query) or a header is longer than the parser reads."""

    status = 431
    name = "RequestHeaderFieldsTooLarge"


class ContentTypeError(AppError):
    """The body is not sent as application/json."""

    status = 415
    name = "ContentTypeerror"  # this spelling is the contract (docs/behavior.md, "Errors")


class NotReady(AppError):
    """/ready: draining, or the database does not answer, or its schema is not ours."""

    status = 503
    name = "ServiceUnavailable"
    retry_after = 2


class RequestTimeout(AppError):
    """The request's head or body did not arrive in time (a client trickling it, or gone)."""

    status = 408
    name = "RequestTimeout"
    close_connection = True


class TooManyRequests(AppError):
    """A rate limit was reached; Retry-After says when the next attempt is allowed."""

    status = 429
    name = "TooManyRequests"

    def __init__(self, message: str, retry_after: int) -> None:
        super().__init__(message)
        self.retry_after = max(1, retry_after)


class ServiceUnavailable(AppError):
    """The database cannot be reached (or refuses connections) right now: try again soon."""

    status = 503
    name = "ServiceUnavailable"
    retry_after = 2


class WeakPassword(AppError):
    """A password that fails the OWASP strength rules Unleash applies: the message is the first
    rule broken; `details` lists them all, which the UI's strength meter reads (without them it
    shows every rule as met)."""

    status = 400
    name = "OwaspValidationError"

    def __init__(self, problems: list[str]) -> None:
        super().__init__(problems[0])
        self.problems = problems

    def extra(self) -> dict[str, object]:
        return {"details": [{"validationErrors": self.problems, "message": self.message}]}


class PasswordMismatch(AppError):
    """Sign-in failed; the same answer whether the account exists or not."""

    status = 401
    name = "PasswordMismatch"  # Unleash's name for it


class InvalidToken(AppError):
    """A reset link's token that is unknown, used or expired (one answer for all three)."""

    status = 401
    name = "InvalidTokenError"  # Unleash's name for it


class PatLimit(AppError):
    """An account already holds the most personal access tokens allowed."""

    status = 403
    name = "OperationDeniedError"  # Unleash's name for it


class InvalidOperation(AppError):
    """An operation Unleash refuses as invalid with 403 (e.g. marking another project's flags
    stale through this project's route)."""

    status = 403
    name = "InvalidOperationError"  # Unleash's name for it


def from_log(exc: AppError | LogError) -> AppError:
    """What a failure of the event log's layer means to a client: a key store that cannot open
    what it should is a 503 (another replica may answer), an append that another one overtook
    a 409. A domain error is itself."""
    if isinstance(exc, AppError):
        return exc
    if isinstance(exc, Unavailable):
        return ServiceUnavailable(str(exc))
    if isinstance(exc, (WrongExpectedVersion, PartialDuplicate)):
        return Conflict(str(exc))
    return AppError(str(exc))


class MaintenanceMode(AppError):
    """Maintenance mode is on: the admin API refuses changes until it is turned off
    (service/instance/maintenance.py). Unleash answers this with 503 too."""

    status = 503
    name = "MaintenanceModeError"


class ImportRefused(ValidationError):
    """An export file that cannot be imported as it is (docs/behavior.md, "Export and
    import"): nothing of it is written. `details` lists every error, as the import's check
    (`POST /api/admin/features-batch/validate`) lists them: a message and what it concerns."""

    def __init__(self, problems: list[tuple[str, list[str]]]) -> None:
        message, affected = problems[0]
        super().__init__(f"The file cannot be imported: {message} {', '.join(affected)}")
        self.problems = problems

    def extra(self) -> dict[str, object]:
        return {
            "details": [
                {"message": f"{message} {', '.join(affected)}", "affectedItems": affected}
                for message, affected in self.problems
            ]
        }


class MissingPermissions(NoAccess):
    """An import needs permissions the caller lacks; `permissions` names them as Unleash's
    answer does (its display names)."""

    def __init__(self, permissions: list[str]) -> None:
        listed = ", ".join(f'"{p}"' for p in permissions)
        super().__init__(
            "You don't have the required permissions to perform this operation. To perform"
            f" this action, you need one of the following permissions: {listed}."
        )
        self.permissions = permissions

    def extra(self) -> dict[str, object]:
        return {"permissions": self.permissions}
